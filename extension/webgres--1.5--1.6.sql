-- webgres 1.5 to 1.6
-- Every change here is also made in the whole script of the latest version.

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.6'" to load this file. \quit

-- ==== uploads and bulk ingest (docs/uploads.md) ====
-- Form bodies by their content type: url-encoded or multipart/form-data
-- fields as jsonb, and a multipart body's files as rows with their content
-- as bytea.

CREATE FUNCTION webgres.body_form(body bytea, body_type text) RETURNS jsonb
	LANGUAGE c IMMUTABLE PARALLEL SAFE
	AS 'MODULE_PATHNAME', 'webgres_body_form_typed';
COMMENT ON FUNCTION webgres.body_form(bytea, text) IS
  'A form body''s fields as a jsonb object (a repeated name''s values as an array): application/x-www-form-urlencoded (also when body_type, the request''s Content-Type, is NULL) or the parts of a multipart/form-data body that carry no filename. A malformed body is a 400 saying what is wrong; another content type a 415.';

CREATE FUNCTION webgres.body_files(body bytea, body_type text,
	OUT field text, OUT filename text, OUT content_type text, OUT size bigint, OUT content bytea)
	RETURNS SETOF record
	LANGUAGE c IMMUTABLE PARALLEL SAFE ROWS 4
	AS 'MODULE_PATHNAME', 'webgres_body_files';
COMMENT ON FUNCTION webgres.body_files(bytea, text) IS
  'The files of a multipart/form-data body, one row per part with a filename, in order: its field name, its filename (filename* when given, decoded; data, never a path), its Content-Type (NULL when the part names none), its size in bytes and its content. A url-encoded body has none.';

CREATE FUNCTION webgres.ingest(target regclass, body bytea, body_type text) RETURNS bigint
	LANGUAGE c VOLATILE
	AS 'MODULE_PATHNAME', 'webgres_ingest';
COMMENT ON FUNCTION webgres.ingest(regclass, bytea, text) IS
  'Inserts the rows of a request body into target as the calling role (privileges, constraints, triggers and row-level security apply) and returns how many were inserted. body_type chooses the format: text/csv (the first record names the columns unless header=absent), application/x-ndjson (an object a line) or application/json (an array of objects; the first object''s keys choose the columns). A row that does not convert or insert is an error naming its line (or element) and column; the request''s transaction then keeps none.';

-- A route's own limit on request bodies, beside webgres.max_body_size.
ALTER TABLE webgres.routes ADD COLUMN max_body_size integer CHECK (max_body_size >= 0);
COMMENT ON COLUMN webgres.routes.max_body_size IS
  'The most bytes a request body may hold for this route; larger ones are answered 413 before any SQL runs. NULL: webgres.max_body_size only, which also bounds this (libh2o refuses larger bodies before any route is known).';

-- webgres.openapi() is replaced once, below, with the WebSocket routes.

-- ==== WebSocket routes ====
-- A route may upgrade its GET requests to a WebSocket (docs/websocket.md):
-- its handler runs when the socket opens (it may refuse with a status and
-- names the channels whose notifications become messages), on_message for
-- each message the client sends and on_close once it has closed, each as
-- the route's owner or the token's role, with the request's claims.
ALTER TABLE webgres.routes
	ADD COLUMN upgrade text
		CONSTRAINT routes_upgrade_check CHECK (upgrade = 'websocket'),
	ADD COLUMN on_message text,
	ADD COLUMN on_close text,
	ADD CONSTRAINT routes_upgrade_method_check
		CHECK (upgrade IS NULL OR (method = 'GET' AND mode <> 'stream')),
	ADD CONSTRAINT routes_upgrade_handlers_check
		CHECK (upgrade IS NOT NULL OR (on_message IS NULL AND on_close IS NULL));
COMMENT ON COLUMN webgres.routes.upgrade IS
  'websocket: the route''s GET requests open a WebSocket; the handler runs when it opens (status, channels, body: a first message). NULL: an ordinary route.';
COMMENT ON COLUMN webgres.routes.on_message IS
  'For a WebSocket route: one SQL statement run for each message the client sends, with $1 the connection id (bigint), $2 a text message (else NULL) and $3 a binary one (else NULL); each row''s first column (text or bytea) is sent back as a message.';
COMMENT ON COLUMN webgres.routes.on_close IS
  'For a WebSocket route: one SQL statement run once the socket has closed, with $1 the connection id (bigint) and $2 the close code (integer).';

-- webgres.openapi() marks WebSocket routes: a 101 response and x-webgres-upgrade.
CREATE OR REPLACE FUNCTION webgres.openapi(servers text[] DEFAULT NULL,
								title text DEFAULT 'webgres',
								version text DEFAULT '1.0.0')
	RETURNS jsonb
	LANGUAGE sql STABLE
	SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	WITH security AS (
		-- A token comes as a bearer token, or in the cookie webgres.jwt_cookie names.
		SELECT jsonb_build_array(jsonb_build_object('bearerAuth', '[]'::jsonb))
			   || CASE WHEN coalesce(current_setting('webgres.jwt_cookie', true), '') <> ''
				  THEN jsonb_build_array(jsonb_build_object('cookieAuth', '[]'::jsonb)) ELSE '[]'::jsonb END AS schemes,
			   jsonb_build_object('bearerAuth', jsonb_build_object('type', 'http', 'scheme', 'bearer', 'bearerFormat', 'JWT'))
			   || CASE WHEN coalesce(current_setting('webgres.jwt_cookie', true), '') <> ''
				  THEN jsonb_build_object('cookieAuth', jsonb_build_object('type', 'apiKey', 'in', 'cookie',
						 'name', current_setting('webgres.jwt_cookie', true))) ELSE '{}'::jsonb END AS definitions
	), route AS (
		SELECT r.id, r.path, r.priority, r.description, r.mode, r.handler, r.auth, r.upgrade, r.max_body_size,
			   v.verb, webgres.openapi_path(r.path) AS template,
			   ARRAY(SELECT CASE WHEN m[2] = '' THEN 'rest' ELSE m[2] END
					 FROM regexp_matches(r.path, '(^|/)[:*]([A-Za-z0-9_]*)', 'g') AS m) AS params
		FROM webgres.routes r
			CROSS JOIN LATERAL unnest(CASE WHEN r.method IS NULL
				THEN ARRAY['get', 'put', 'post', 'delete', 'patch']
				ELSE ARRAY[lower(r.method)] END) AS v(verb)
		WHERE lower(coalesce(r.method, 'get')) IN ('get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace')
	), operation AS (
		SELECT route.template, route.verb, route.priority, route.id,
			jsonb_strip_nulls(jsonb_build_object(
				'operationId', concat_ws('_', route.verb,
					nullif(btrim(regexp_replace(route.path, '[^A-Za-z0-9]+', '_', 'g'), '_'), ''),
					route.id),
				'summary', nullif(split_part(route.description, E'\n', 1), ''),
				'description', route.description,
				'parameters', (SELECT jsonb_agg(jsonb_build_object('name', p, 'in', 'path', 'required', true,
																   'schema', jsonb_build_object('type', 'string')))
							   FROM unnest(route.params) AS p),
				'requestBody', CASE
					-- A handler that loads the body into a table (docs/uploads.md).
					WHEN route.verb IN ('post', 'put', 'patch') AND route.handler ~* '\mingest\s*\(' THEN
					jsonb_build_object('required', true, 'description', 'Rows for a table, one a record, line or element.', 'content',
						jsonb_build_object('text/csv', jsonb_build_object('schema', jsonb_build_object('type', 'string')),
										   'application/x-ndjson', jsonb_build_object('schema', jsonb_build_object('type', 'string')),
										   'application/json', jsonb_build_object('schema', '{"type": "array", "items": {"type": "object", "additionalProperties": true}}'::jsonb)))
					-- A handler that reads a form's files: a multipart form.
					WHEN route.verb IN ('post', 'put', 'patch') AND route.handler ~* '\mbody_files\s*\(' THEN
					jsonb_build_object('required', true, 'content',
						jsonb_build_object('multipart/form-data', jsonb_build_object('schema',
							'{"type": "object", "additionalProperties": {"oneOf": [{"type": "string"}, {"type": "string", "contentMediaType": "application/octet-stream"}]}}'::jsonb),
										   'application/x-www-form-urlencoded', jsonb_build_object('schema', '{"type": "object", "additionalProperties": {"type": "string"}}'::jsonb)))
					WHEN route.verb IN ('post', 'put', 'patch') THEN
					jsonb_build_object('required', false, 'content',
						jsonb_build_object('application/json', jsonb_build_object('schema', '{"type": "object", "additionalProperties": true}'::jsonb),
										   'application/x-www-form-urlencoded', jsonb_build_object('schema', '{"type": "object", "additionalProperties": {"type": "string"}}'::jsonb),
										   'text/plain', jsonb_build_object('schema', jsonb_build_object('type', 'string'))))
					END,
				'responses', CASE WHEN route.upgrade = 'websocket' THEN jsonb_build_object(
					'101', jsonb_build_object('description',
						'Switching Protocols: a WebSocket, whose messages the route''s on_message handler answers.'),
					'426', jsonb_build_object('description', 'Not a WebSocket handshake, or not version 13.'),
					'default', jsonb_build_object('description', 'Another status the open handler chose, or an error.'))
					ELSE jsonb_build_object(
					'200', jsonb_build_object(
						'description', CASE
							WHEN route.mode = 'stream' THEN 'The rows, streamed in the format Accept asks for.'
							WHEN route.handler ~* '\mchannels\M' THEN 'Server-sent events: the rows, then each notification.'
							ELSE 'The handler''s response.' END,
						'content', CASE
							WHEN route.mode = 'stream' THEN jsonb_build_object(
								'application/json', jsonb_build_object('schema', jsonb_build_object('type', 'array')),
								'application/x-ndjson', jsonb_build_object('schema', jsonb_build_object('type', 'string')),
								'text/csv', jsonb_build_object('schema', jsonb_build_object('type', 'string')))
							WHEN route.handler ~* '\mchannels\M' THEN jsonb_build_object(
								'text/event-stream', jsonb_build_object('schema', jsonb_build_object('type', 'string')))
							WHEN route.handler ~* '''[a-z]+/[-a-z0-9.+]+[^'']*''\s*(::\s*text\s*)?AS\s+content_type\M' THEN jsonb_build_object(
								substring(route.handler FROM '(?i)''([a-z]+/[-a-z0-9.+]+)[^'']*''\s*(?:::\s*text\s*)?AS\s+content_type'),
								jsonb_build_object('schema', '{}'::jsonb))
							ELSE jsonb_build_object('*/*', jsonb_build_object('schema', '{}'::jsonb)) END),
					'default', jsonb_build_object('description', 'Another status the handler chose, or an error.')) END
					|| CASE WHEN route.max_body_size IS NOT NULL THEN jsonb_build_object('413', jsonb_build_object(
						'description', format('The request body is over %s bytes.', route.max_body_size))) ELSE '{}'::jsonb END
					|| CASE WHEN route.auth <> 'none' THEN jsonb_build_object('401', jsonb_build_object(
						'description', 'The token is missing (auth required), invalid or expired.')) ELSE '{}'::jsonb END,
				'security', CASE route.auth
					WHEN 'required' THEN security.schemes
					WHEN 'optional' THEN '[{}]'::jsonb || security.schemes END,
				'x-webgres-route-id', route.id,
				'x-webgres-mode', route.mode,
				'x-webgres-max-body-size', route.max_body_size,
				'x-webgres-upgrade', route.upgrade)) AS op
		FROM route, security
	), path AS (
		SELECT template, jsonb_object_agg(verb, op ORDER BY priority, id DESC) AS ops
		FROM operation GROUP BY template
	)
	SELECT jsonb_strip_nulls(jsonb_build_object(
		'openapi', '3.1.0',
		'info', jsonb_build_object('title', title, 'version', version),
		'servers', (SELECT jsonb_agg(jsonb_build_object('url', s)) FROM unnest(servers) AS s),
		'paths', coalesce((SELECT jsonb_object_agg(template, ops ORDER BY template) FROM path), '{}'::jsonb),
		'components', (SELECT jsonb_build_object('securitySchemes', security.definitions) FROM security
					   WHERE EXISTS (SELECT FROM route WHERE route.auth <> 'none'))));
END;

COMMENT ON FUNCTION webgres.openapi(text[], text, text) IS
  'An OpenAPI 3.1 document describing the routes the calling role can see: paths (parameters as {name}), methods, summary and description from the description column, request bodies (multipart/form-data for handlers that read body_files, text/csv, application/x-ndjson and JSON arrays for handlers that call ingest), response content types (stream formats, text/event-stream, a content_type the handler names), WebSocket routes (101 and x-webgres-upgrade), 413 for routes with max_body_size, and the bearer token (or cookie) security of routes with auth. servers: the base URLs clients use.';
