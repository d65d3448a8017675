-- webgres.max_body_size stops at the largest body one hand-off frame
-- carries (1 GB less 16 MB): a larger body could be taken in but never
-- given to a handler.
SELECT max_val, unit FROM pg_settings WHERE name = 'webgres.max_body_size';
ALTER SYSTEM SET webgres.max_body_size = '1GB';
ALTER SYSTEM SET webgres.max_body_size = '1000MB';
ALTER SYSTEM RESET webgres.max_body_size;
