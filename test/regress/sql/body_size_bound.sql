-- webgres.max_body_size stops at the largest body one hand-off frame
-- carries (1 GB less 16 MB): a larger body could be taken in but never
-- given to a handler.  Postgres 16 and later print the valid range with its
-- unit: expected/body_size_bound_1.out is their output.
SELECT max_val, unit FROM pg_settings WHERE name = 'webgres.max_body_size';
ALTER SYSTEM SET webgres.max_body_size = '1GB';
ALTER SYSTEM SET webgres.max_body_size = '1000MB';
ALTER SYSTEM RESET webgres.max_body_size;
