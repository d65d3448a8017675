-- The board: a live team board on webgres alone (examples/board/README.md).
--
-- Loaded by a superuser into the database the workers serve, with the
-- psql variable static_dir naming the directory of the front end:
--
--   psql -v static_dir=/srv/board/static -f examples/board/board.sql
--
-- Everything the application does is here: the schema, the row-level
-- security that decides who sees what, the triggers that announce changes,
-- the routes, and the mount that serves the front end.

\set ON_ERROR_STOP on
CREATE EXTENSION IF NOT EXISTS pgcrypto;
CREATE EXTENSION IF NOT EXISTS webgres;

-- ==== roles ====
-- board_api      owns the routes: the "authenticator". It holds no data
--                privileges of its own (NOINHERIT); each handler runs as
--                the role the request's token names, which board_api must
--                be a member of.
-- board_user     the role every signed-in user's token names; who the user
--                is comes from the token's "sub" claim, which the policies
--                read.
-- board_anon     requests without a session (webgres.anon_role): they may
--                only ask who they are (nobody) and sign up or log in.
-- board_accounts owns the accounts table and the sign-up and log-in
--                functions, the only code that sees password hashes.
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'board_user') THEN
    CREATE ROLE board_user NOLOGIN;
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'board_anon') THEN
    CREATE ROLE board_anon NOLOGIN;
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'board_api') THEN
    CREATE ROLE board_api NOLOGIN NOINHERIT;
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'board_accounts') THEN
    CREATE ROLE board_accounts NOLOGIN;
  END IF;
END $$;
GRANT board_user, board_anon TO board_api;

DROP SCHEMA IF EXISTS board CASCADE;
CREATE SCHEMA board AUTHORIZATION board_accounts;
GRANT USAGE ON SCHEMA board TO board_user, board_api;

-- ==== accounts: only board_accounts reads them ====
CREATE TABLE board.accounts (
  id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name     text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9_.-]{2,32}$'),
  password text NOT NULL,                          -- crypt() with a bf salt
  created  timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE board.accounts OWNER TO board_accounts;

-- A token for the account: the role the policies know, the account as
-- "sub", its name for the page, valid for twelve hours.
CREATE FUNCTION board.token_for(a board.accounts) RETURNS text
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog
  RETURN webgres.jwt_sign(jsonb_build_object('role', 'board_user',
                                             'sub', a.id::text,
                                             'name', a.name),
                          interval '12 hours');

-- The answer to a successful sign-up or log-in: the token in a cookie the
-- page's script cannot read, sent only over HTTPS and only with requests
-- from this site's own pages; its __Host- name keeps other hosts (a
-- sibling subdomain) from setting one of the same name.
CREATE FUNCTION board.session_cookie(token text) RETURNS text
  LANGUAGE sql IMMUTABLE
  RETURN '__Host-board_token=' || token || '; Path=/; HttpOnly; Secure; SameSite=Lax; Max-Age=43200';

CREATE FUNCTION board.sign_up(name text, password text)
  RETURNS TABLE (status int, headers jsonb, body jsonb)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, board AS $$
DECLARE
  a board.accounts;
BEGIN
  IF password IS NULL OR length(password) < 8 THEN
    RETURN QUERY SELECT 422, NULL::jsonb, jsonb_build_object('error', 'The password needs at least 8 characters.');
    RETURN;
  END IF;
  IF name IS NULL OR name !~ '^[A-Za-z0-9_.-]{2,32}$' THEN
    RETURN QUERY SELECT 422, NULL::jsonb, jsonb_build_object('error', 'A name is 2 to 32 letters, digits, dots, dashes or underscores.');
    RETURN;
  END IF;
  INSERT INTO board.accounts (name, password)
    VALUES (sign_up.name, public.crypt(sign_up.password, public.gen_salt('bf', 8)))
    ON CONFLICT ON CONSTRAINT accounts_name_key DO NOTHING
    RETURNING * INTO a;
  IF a.id IS NULL THEN
    RETURN QUERY SELECT 409, NULL::jsonb, jsonb_build_object('error', 'That name is taken.');
    RETURN;
  END IF;
  RETURN QUERY SELECT 201, jsonb_build_object('Set-Cookie', board.session_cookie(board.token_for(a))),
                      jsonb_build_object('id', a.id, 'name', a.name);
END $$;

CREATE FUNCTION board.log_in(name text, password text)
  RETURNS TABLE (status int, headers jsonb, body jsonb)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, board AS $$
DECLARE
  a board.accounts;
BEGIN
  SELECT * INTO a FROM board.accounts x WHERE x.name = log_in.name;
  -- Compare against a hash even for an unknown name, so that the time
  -- taken does not tell which names exist.
  IF public.crypt(coalesce(password, ''), coalesce(a.password, '$2a$08$0000000000000000000000000000000000000000000000000000')) IS DISTINCT FROM a.password
     OR a.id IS NULL THEN
    RETURN QUERY SELECT 401, NULL::jsonb, jsonb_build_object('error', 'Wrong name or password.');
    RETURN;
  END IF;
  RETURN QUERY SELECT 200, jsonb_build_object('Set-Cookie', board.session_cookie(board.token_for(a))),
                      jsonb_build_object('id', a.id, 'name', a.name);
END $$;

ALTER FUNCTION board.token_for(board.accounts) OWNER TO board_accounts;
ALTER FUNCTION board.sign_up(text, text) OWNER TO board_accounts;
ALTER FUNCTION board.log_in(text, text) OWNER TO board_accounts;
REVOKE ALL ON FUNCTION board.token_for(board.accounts), board.sign_up(text, text), board.log_in(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION board.sign_up(text, text), board.log_in(text, text) TO board_api;
-- Only the accounts' owner may mint tokens.
GRANT EXECUTE ON FUNCTION webgres.jwt_sign(jsonb, interval) TO board_accounts;

-- ==== items: row-level security decides who sees what ====
CREATE TABLE board.items (
  id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  owner    bigint NOT NULL DEFAULT (current_setting('request.jwt.claims', true)::jsonb->>'sub')::bigint
                  REFERENCES board.accounts ON DELETE CASCADE,
  author   text NOT NULL DEFAULT (current_setting('request.jwt.claims', true)::jsonb->>'name'),
  title    text NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
  body     text NOT NULL DEFAULT '' CHECK (length(body) <= 4000),
  public   boolean NOT NULL DEFAULT true,
  created  timestamptz NOT NULL DEFAULT now(),
  updated  timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE board.items OWNER TO board_accounts;
ALTER TABLE board.items ENABLE ROW LEVEL SECURITY;

-- The user's own id, from the verified token (PostgREST's setting).
CREATE FUNCTION board.me() RETURNS bigint
  LANGUAGE sql STABLE
  RETURN (current_setting('request.jwt.claims', true)::jsonb->>'sub')::bigint;

-- Everyone signed in sees public items and their own private ones; only
-- the author changes or deletes an item.
CREATE POLICY items_read ON board.items FOR SELECT TO board_user
  USING (public OR owner = board.me());
CREATE POLICY items_add ON board.items FOR INSERT TO board_user
  WITH CHECK (owner = board.me());
CREATE POLICY items_change ON board.items FOR UPDATE TO board_user
  USING (owner = board.me()) WITH CHECK (owner = board.me());
CREATE POLICY items_remove ON board.items FOR DELETE TO board_user
  USING (owner = board.me());
GRANT SELECT, INSERT, DELETE ON board.items TO board_user;
GRANT UPDATE (title, body, public, updated) ON board.items TO board_user;

-- ==== attachments: a file an item may carry (docs/uploads.md) ====
-- Whoever sees the item sees its file: the read policy asks board.items,
-- whose own policies apply to the question.  Only the item's author
-- attaches or replaces it.
CREATE TABLE board.attachments (
  item     bigint PRIMARY KEY REFERENCES board.items ON DELETE CASCADE,
  owner    bigint NOT NULL DEFAULT board.me(),
  filename text NOT NULL CHECK (length(filename) BETWEEN 1 AND 255),
  type     text NOT NULL,
  size     bigint NOT NULL,
  data     bytea NOT NULL
);
ALTER TABLE board.attachments OWNER TO board_accounts;
ALTER TABLE board.attachments ENABLE ROW LEVEL SECURITY;
CREATE POLICY attachments_read ON board.attachments FOR SELECT TO board_user
  USING (EXISTS (SELECT FROM board.items i WHERE i.id = item));
CREATE POLICY attachments_add ON board.attachments FOR INSERT TO board_user
  WITH CHECK (owner = board.me() AND EXISTS (SELECT FROM board.items i WHERE i.id = item AND i.owner = board.me()));
CREATE POLICY attachments_change ON board.attachments FOR UPDATE TO board_user
  USING (owner = board.me()) WITH CHECK (owner = board.me());
GRANT SELECT, INSERT, UPDATE ON board.attachments TO board_user;

-- What the board shows of an item's file: its name, type and size.
CREATE FUNCTION board.attachment_of(item bigint) RETURNS jsonb
  LANGUAGE sql STABLE
  RETURN (SELECT jsonb_build_object('filename', a.filename, 'type', a.type, 'size', a.size)
          FROM board.attachments a WHERE a.item = attachment_of.item);

-- ==== changes: an event log, announced as it is written ====
-- Every change to an item is a row here, so a browser that reconnects
-- catches up from the id it last saw (Last-Event-ID); the same row is
-- announced with pg_notify on the channel of whoever may see it.
CREATE TABLE board.changes (
  id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  item    bigint NOT NULL,
  owner   bigint NOT NULL,
  public  boolean NOT NULL,       -- whether others may see this change
  op      text NOT NULL CHECK (op IN ('upsert', 'delete')),
  data    jsonb NOT NULL,
  at      timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE board.changes OWNER TO board_accounts;
ALTER TABLE board.changes ENABLE ROW LEVEL SECURITY;
CREATE POLICY changes_read ON board.changes FOR SELECT TO board_user
  USING (public OR owner = board.me());
GRANT SELECT ON board.changes TO board_user;

-- Records and announces a change, as an event envelope (docs/events.md):
-- its id (what Last-Event-ID names on a reconnect), its kind as the event
-- type ('upsert' or 'delete'), the item as data.  Channels: 'board_public' for what
-- everyone may see, 'board_user_<id>' for what only its owner may.  An item
-- made private is announced to the others as deleted, so that it leaves
-- their boards; one made public again arrives as new.
CREATE FUNCTION board.record_change() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, board AS $$
DECLARE
  c board.changes;
  item jsonb;
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO board.changes (item, owner, public, op, data)
      VALUES (OLD.id, OLD.owner, OLD.public, 'delete', jsonb_build_object('id', OLD.id))
      RETURNING * INTO c;
  ELSE
    item := jsonb_build_object('id', NEW.id, 'owner', NEW.owner, 'author', NEW.author,
                               'title', NEW.title, 'body', NEW.body, 'public', NEW.public,
                               'created', NEW.created, 'updated', NEW.updated,
                               'attachment', board.attachment_of(NEW.id));
    IF TG_OP = 'UPDATE' AND OLD.public AND NOT NEW.public THEN
      -- Gone for everyone else.
      INSERT INTO board.changes (item, owner, public, op, data)
        VALUES (NEW.id, NEW.owner, true, 'delete', jsonb_build_object('id', NEW.id))
        RETURNING * INTO c;
      PERFORM pg_notify('board_public', jsonb_build_object('id', c.id, 'event', c.op, 'data', c.data)::text);
    END IF;
    INSERT INTO board.changes (item, owner, public, op, data)
      VALUES (NEW.id, NEW.owner, NEW.public, 'upsert', item)
      RETURNING * INTO c;
  END IF;
  PERFORM pg_notify(CASE WHEN c.public THEN 'board_public' ELSE 'board_user_' || c.owner END,
                    jsonb_build_object('id', c.id, 'event', c.op, 'data', c.data)::text);
  RETURN NULL;
END $$;
ALTER FUNCTION board.record_change() OWNER TO board_accounts;
CREATE TRIGGER record_change AFTER INSERT OR UPDATE OR DELETE ON board.items
  FOR EACH ROW EXECUTE FUNCTION board.record_change();

-- ==== routes ====
-- All saved as board_api's; the API under /api, the front end at /.
DELETE FROM webgres.routes WHERE path LIKE '/api/%' AND owner = 'board_api'::regrole;

INSERT INTO webgres.routes (method, path, auth, owner, description, handler) VALUES
 ('POST', '/api/signup', 'none', 'board_api',
  $d$Create an account; answers a session cookie.$d$, $$
    SELECT s.status, s.headers, s.body
    FROM request,
         board.sign_up(webgres.body_json(request.body)->>'name',
                       webgres.body_json(request.body)->>'password') s $$),

 ('POST', '/api/login', 'none', 'board_api',
  $d$Log in; answers a session cookie.$d$, $$
    SELECT s.status, s.headers, s.body
    FROM request,
         board.log_in(webgres.body_json(request.body)->>'name',
                      webgres.body_json(request.body)->>'password') s $$),

 ('POST', '/api/logout', 'none', 'board_api',
  $d$Log out: the session cookie is cleared.$d$, $$
    SELECT 204 AS status,
           jsonb_build_object('Set-Cookie', '__Host-board_token=; Path=/; HttpOnly; Secure; SameSite=Lax; Max-Age=0') AS headers
    FROM request $$),

 ('GET', '/api/me', 'optional', 'board_api',
  $d$Who the session belongs to: an id and a name, both null without a session.$d$, $$
    SELECT jsonb_build_object('id', (request.claims->>'sub')::bigint,
                              'name', request.claims->>'name') AS body
    FROM request $$),

 ('GET', '/api/items', 'required', 'board_api',
  $d$The items the user may see (every public item and their own private ones), and the last change so far.$d$, $$
    SELECT jsonb_build_object(
             'items', (SELECT coalesce(jsonb_agg(jsonb_build_object('id', i.id, 'owner', i.owner, 'author', i.author,
                                                                    'title', i.title, 'body', i.body, 'public', i.public,
                                                                    'created', i.created, 'updated', i.updated,
                                                                    'attachment', board.attachment_of(i.id))
                                                 ORDER BY i.id), '[]')
                       FROM board.items i),
             'last_change', (SELECT coalesce(max(c.id), 0) FROM board.changes c)) AS body
    FROM request $$),

 ('POST', '/api/items', 'required', 'board_api',
  $d$Add an item.$d$, $$
    INSERT INTO board.items (title, body, public)
    SELECT webgres.body_json(request.body)->>'title',
           coalesce(webgres.body_json(request.body)->>'body', ''),
           coalesce((webgres.body_json(request.body)->>'public')::boolean, true)
    FROM request
    RETURNING 201 AS status, jsonb_build_object('id', id) AS body $$),

 ('PUT', '/api/items/:id', 'required', 'board_api',
  $d$Change one of your items.$d$, $$
    UPDATE board.items i
    SET title = coalesce(webgres.body_json(request.body)->>'title', i.title),
        body = coalesce(webgres.body_json(request.body)->>'body', i.body),
        public = coalesce((webgres.body_json(request.body)->>'public')::boolean, i.public),
        updated = now()
    FROM request
    WHERE i.id = (request.params->>'id')::bigint
    RETURNING 200 AS status, jsonb_build_object('id', i.id) AS body $$),

 ('POST', '/api/items/:id/attachment', 'required', 'board_api',
  $d$Attach a file to one of your items (multipart/form-data, field "file"), replacing any; the item is announced again with it.$d$, $$
    WITH file AS (
      SELECT f.filename, coalesce(f.content_type, 'application/octet-stream') AS type, f.size, f.content
      FROM request, webgres.body_files(request.body, request.headers->>'content-type') f
      WHERE f.field = 'file' AND f.filename <> ''
      LIMIT 1
    ), stored AS (
      INSERT INTO board.attachments (item, filename, type, size, data)
      SELECT (request.params->>'id')::bigint, file.filename, file.type, file.size, file.content
      FROM request, file
      ON CONFLICT (item) DO UPDATE
        SET filename = EXCLUDED.filename, type = EXCLUDED.type, size = EXCLUDED.size, data = EXCLUDED.data
      RETURNING item, size
    ), announced AS (
      UPDATE board.items i SET updated = now() FROM stored WHERE i.id = stored.item RETURNING i.id
    )
    SELECT CASE WHEN EXISTS (SELECT FROM announced) THEN 201
                WHEN EXISTS (SELECT FROM file) THEN 404 ELSE 400 END AS status,
           CASE WHEN EXISTS (SELECT FROM announced) THEN (SELECT jsonb_build_object('item', item, 'size', size) FROM stored)
                WHEN EXISTS (SELECT FROM file) THEN '{"error": "no such item of yours"}'::jsonb
                ELSE '{"error": "no file in the field \"file\""}'::jsonb END AS body $$),

 ('GET', '/api/items/:id/attachment', 'required', 'board_api',
  $d$An item's file, as an attachment with its name and type, to whoever may see the item.$d$, $$
    SELECT a.type AS content_type, a.data AS body,
           jsonb_build_object('Content-Disposition',
                              format('attachment; filename="%s"', regexp_replace(a.filename, '[\x01-\x1f\x7f"\\]', '_', 'g')),
                              'Cache-Control', 'private, no-cache') AS headers
    FROM board.attachments a, request
    WHERE a.item = (request.params->>'id')::bigint $$),

 ('DELETE', '/api/items/:id', 'required', 'board_api',
  $d$Delete one of your items.$d$, $$
    DELETE FROM board.items i USING request
    WHERE i.id = (request.params->>'id')::bigint
    RETURNING 204 AS status $$),

 ('GET', '/api/events', 'required', 'board_api',
  $d$The board's changes as server-sent events after Last-Event-ID (or ?after=, for the first connection).$d$, $$
    SELECT ARRAY['board_public', 'board_user_' || (request.claims->>'sub')] AS channels,
           c.id, c.op AS event, c.data
    FROM request
    LEFT JOIN board.changes c
      ON c.id > coalesce(nullif(request.headers->>'last-event-id', ''),
                         request.query->>'after')::bigint
    ORDER BY c.id $$);

-- ==== presence: who is looking now, who is typing (a WebSocket) ====
-- Each open socket of /api/presence is a row here, keyed by its
-- connection's id (request.websocket_id).  The row is removed by the
-- route's close handler; a socket that died without one (its worker
-- stopped or crashed) is recognised by its worker: the connection's id
-- carries the worker's process id in its high 32 bits, and the row keeps
-- when that process started, so a row whose process is gone, or whose id
-- another process now has, is left out of every list and removed by the
-- next socket that opens.  Only board_accounts' functions touch the table:
-- a user may not add or remove anyone else's row.
CREATE TABLE board.presence (
  conn           bigint PRIMARY KEY,   -- request.websocket_id
  account        bigint NOT NULL REFERENCES board.accounts ON DELETE CASCADE,
  name           text NOT NULL,
  worker_started timestamptz NOT NULL, -- backend_start of the socket's worker
  since          timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE board.presence OWNER TO board_accounts;
-- When the webgres worker with process id pid started, or NULL if no
-- webgres worker has that id.  pg_stat_activity shows other roles' start
-- times only to members of pg_read_all_stats, which would also show
-- board_accounts every session's queries; so this one function, owned by
-- the superuser loading the file and run by board_accounts alone, tells
-- it the one thing it needs.
CREATE FUNCTION board.worker_started(pid int) RETURNS timestamptz
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog
  RETURN (SELECT a.backend_start FROM pg_stat_activity a
          WHERE a.pid = $1 AND a.backend_type = 'webgres worker');
REVOKE ALL ON FUNCTION board.worker_started(int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION board.worker_started(int) TO board_accounts;

-- Whether the socket's worker still runs: the same process id, started at
-- the same time.
CREATE FUNCTION board.socket_alive(conn bigint, worker_started timestamptz) RETURNS boolean
  LANGUAGE sql STABLE SET search_path = pg_catalog
  RETURN coalesce(board.worker_started((conn >> 32)::int) = worker_started, false);

-- The presence message: the names of those looking now, each once, in
-- order, sockets of gone workers left out.
CREATE FUNCTION board.presence_list() RETURNS jsonb
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, board
  RETURN (SELECT jsonb_build_object('type', 'presence',
                                    'names', coalesce(jsonb_agg(DISTINCT p.name ORDER BY p.name), '[]'))
          FROM board.presence p
          WHERE board.socket_alive(p.conn, p.worker_started));

-- The open handler's work: forgets the sockets of gone workers, records
-- this one, tells the others, and answers the list with this socket's id
-- (the page ignores its own typing by it).
CREATE FUNCTION board.presence_open() RETURNS jsonb
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, board AS $$
DECLARE
  c bigint := current_setting('request.websocket_id')::bigint;
  claims jsonb := current_setting('request.jwt.claims')::jsonb;
BEGIN
  DELETE FROM board.presence p WHERE NOT board.socket_alive(p.conn, p.worker_started);
  INSERT INTO board.presence (conn, account, name, worker_started)
    SELECT c, (claims->>'sub')::bigint, claims->>'name', w.started
    FROM board.worker_started((c >> 32)::int) AS w(started)
    WHERE w.started IS NOT NULL;
  PERFORM pg_notify('board_presence', jsonb_build_object('type', 'joined', 'name', claims->>'name')::text);
  RETURN board.presence_list() || jsonb_build_object('you', c);
END $$;

-- One message from a socket, small JSON: {"type": "who"} answers the
-- presence list; {"type": "typing", "item": <id>} tells everyone that the
-- sender is typing in that item, if it is public (a private item's id is
-- not announced).  Anything else is answered with an error message, and
-- the socket stays open.
CREATE FUNCTION board.presence_message(msg text) RETURNS text
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, board AS $$
DECLARE
  c bigint := current_setting('request.websocket_id')::bigint;
  m jsonb;
  item bigint;
  who text;
BEGIN
  BEGIN
    m := msg::jsonb;
    item := CASE WHEN jsonb_typeof(m) = 'object' THEN (m->>'item')::bigint END;
  EXCEPTION WHEN invalid_text_representation OR numeric_value_out_of_range THEN
    RETURN jsonb_build_object('type', 'error', 'error', 'not a message of the board')::text;
  END;
  IF jsonb_typeof(m) = 'object' AND m->>'type' = 'who' THEN
    RETURN board.presence_list()::text;
  END IF;
  IF jsonb_typeof(m) = 'object' AND m->>'type' = 'typing' AND item IS NOT NULL THEN
    SELECT p.name INTO who FROM board.presence p WHERE p.conn = c;
    IF who IS NOT NULL AND EXISTS (SELECT FROM board.items i WHERE i.id = item AND i.public) THEN
      PERFORM pg_notify('board_presence',
                        jsonb_build_object('type', 'typing', 'item', item, 'name', who, 'conn', c)::text);
    END IF;
    RETURN NULL;
  END IF;
  RETURN jsonb_build_object('type', 'error', 'error', 'not a message of the board')::text;
END $$;

-- The close handler's work: this socket is gone.
CREATE FUNCTION board.presence_close() RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, board AS $$
DECLARE
  gone text;
BEGIN
  DELETE FROM board.presence p
    WHERE p.conn = current_setting('request.websocket_id')::bigint
    RETURNING p.name INTO gone;
  IF gone IS NOT NULL THEN
    PERFORM pg_notify('board_presence', jsonb_build_object('type', 'left', 'name', gone)::text);
  END IF;
END $$;

ALTER FUNCTION board.socket_alive(bigint, timestamptz) OWNER TO board_accounts;
ALTER FUNCTION board.presence_list() OWNER TO board_accounts;
ALTER FUNCTION board.presence_open() OWNER TO board_accounts;
ALTER FUNCTION board.presence_message(text) OWNER TO board_accounts;
ALTER FUNCTION board.presence_close() OWNER TO board_accounts;
REVOKE ALL ON FUNCTION board.socket_alive(bigint, timestamptz), board.presence_list(),
  board.presence_open(), board.presence_message(text), board.presence_close() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION board.presence_open(), board.presence_message(text),
  board.presence_close() TO board_user;

-- The socket: signed-in users only, as every other route; the browser's
-- Origin must be the board's own (docs/websocket.md), as for its POSTs.
-- Notifications on 'board_presence' (joined, left, typing) become
-- messages; the page answers joined and left with {"type": "who"}.
INSERT INTO webgres.routes (method, path, auth, owner, upgrade, description, handler, on_message, on_close) VALUES
 ('GET', '/api/presence', 'required', 'board_api', 'websocket',
  $d$A WebSocket: who is looking at the board now, and who is typing in which item.$d$,
  $$ SELECT ARRAY['board_presence'] AS channels, board.presence_open()::text AS body FROM request $$,
  $$ SELECT board.presence_message($2) $$,
  $$ SELECT board.presence_close() $$);

-- Attachments up to 5 MB (webgres.max_body_size, set by scripts/demo.sh, is
-- the server's ceiling).
UPDATE webgres.routes SET max_body_size = 5 * 1024 * 1024
WHERE path = '/api/items/:id/attachment' AND method = 'POST' AND owner = 'board_api'::regrole;

-- The export streams as the rows are read: mode 'stream', CSV on request.
INSERT INTO webgres.routes (method, path, auth, owner, mode, description, stream_headers, handler) VALUES
 ('GET', '/api/export', 'required', 'board_api', 'stream',
  $d$Your items as CSV (or JSON, NDJSON by Accept), streamed.$d$,
  '{"content-disposition": "attachment; filename=\"board-items.csv\""}',
  $$ SELECT i.id, i.title, i.body, i.public, i.created, i.updated
     FROM board.items i
     WHERE i.owner = board.me()
     ORDER BY i.id $$);

-- ==== the front end: static files ====
DELETE FROM webgres.static_mounts WHERE prefix = '/';
-- no-cache: browsers revalidate the files on each load (a 304 when they
-- have not changed), so a new version of the front end is seen at once.
INSERT INTO webgres.static_mounts (prefix, directory, owner, cache_control)
  VALUES ('/', :'static_dir', 'board_api', 'no-cache');
