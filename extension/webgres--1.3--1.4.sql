-- webgres 1.3 to 1.4
-- Every change here is made in webgres--1.4.sql too.

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.4'" to load this file. \quit

-- ==== observability: per-route statistics ====
-- Counted in shared memory by the workers and executors (route_stats.c);
-- the view names each route from webgres.routes.

CREATE FUNCTION webgres.route_stats_raw(
	OUT route_id bigint, OUT requests bigint,
	OUT responses_1xx bigint, OUT responses_2xx bigint, OUT responses_3xx bigint,
	OUT responses_4xx bigint, OUT responses_5xx bigint,
	OUT handler_errors bigint, OUT timeouts bigint, OUT queue_full bigint,
	OUT bytes_out bigint, OUT total_time_ms double precision,
	OUT p50_ms double precision, OUT p90_ms double precision, OUT p99_ms double precision,
	OUT latency_buckets bigint[])
	RETURNS SETOF record
	LANGUAGE c VOLATILE STRICT
	AS 'MODULE_PATHNAME', 'webgres_route_stats';

COMMENT ON FUNCTION webgres.route_stats_raw() IS
  'Per route counted since the last reset: requests, responses by status class, handler errors, timeouts (504), queue-full refusals, body bytes sent, total and quantile latencies, and the latency histogram (counts per bucket of webgres.route_latency_bounds(), then one past the last bound).';

CREATE FUNCTION webgres.route_latency_bounds() RETURNS double precision[]
	LANGUAGE c IMMUTABLE STRICT
	AS 'MODULE_PATHNAME', 'webgres_route_latency_bounds';

COMMENT ON FUNCTION webgres.route_latency_bounds() IS
  'Upper bounds, in milliseconds, of the latency histogram buckets of webgres.route_stats; a last bucket takes what is above them.';

CREATE FUNCTION webgres.route_latency_quantile(route bigint, q double precision)
	RETURNS double precision
	LANGUAGE c VOLATILE STRICT
	AS 'MODULE_PATHNAME', 'webgres_route_latency_quantile';

COMMENT ON FUNCTION webgres.route_latency_quantile(bigint, double precision) IS
  'The q-quantile (0 to 1) of the route''s latency in milliseconds, estimated from its histogram as Prometheus'' histogram_quantile does; NULL before its first request.';

CREATE FUNCTION webgres.route_stats_reset(route bigint DEFAULT NULL) RETURNS void
	LANGUAGE c VOLATILE
	AS 'MODULE_PATHNAME', 'webgres_route_stats_reset';

COMMENT ON FUNCTION webgres.route_stats_reset(bigint) IS
  'Sets the route''s counters to zero; with no route, forgets every route''s counters. Superusers only unless granted.';

CREATE VIEW webgres.route_stats AS
	SELECT s.route_id, r.method, r.path, r.owner,
		   s.requests, s.responses_1xx, s.responses_2xx, s.responses_3xx,
		   s.responses_4xx, s.responses_5xx, s.handler_errors, s.timeouts,
		   s.queue_full, s.bytes_out, s.total_time_ms,
		   s.p50_ms, s.p90_ms, s.p99_ms, s.latency_buckets
	FROM webgres.route_stats_raw() s
		LEFT JOIN webgres.routes r ON r.id = s.route_id;

COMMENT ON VIEW webgres.route_stats IS
  'Per route: requests, responses by status class, handler errors, timeouts, queue-full refusals, bytes out and latency (total, p50, p90, p99 in milliseconds, and the histogram whose bucket bounds webgres.route_latency_bounds() gives). Latency runs from when the worker began routing the request to when its response was handed to the connection (a stream: to its end). Method, path and owner are NULL for a deleted route.';

REVOKE ALL ON FUNCTION webgres.route_stats_raw() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION webgres.route_stats_raw() TO pg_monitor;
REVOKE ALL ON FUNCTION webgres.route_latency_quantile(bigint, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION webgres.route_latency_quantile(bigint, double precision) TO pg_monitor;
REVOKE ALL ON FUNCTION webgres.route_stats_reset(bigint) FROM PUBLIC;
REVOKE ALL ON webgres.route_stats FROM PUBLIC;
GRANT SELECT ON webgres.route_stats TO pg_monitor;
-- The request relation gained a column: tls, whether the client's connection is TLS.
COMMENT ON COLUMN webgres.routes.handler IS
  'One SQL statement that may read the relation request(method, path, params, query_string, query, headers, body, tls) and returns columns status, content_type, headers and body.';

-- ==== observability: the routes' description, for webgres.openapi() ====

ALTER TABLE webgres.routes ADD COLUMN description text;
COMMENT ON COLUMN webgres.routes.description IS
  'What the route does, for webgres.openapi(): the first line is the operation''s summary, the whole its description.';

-- Compression (docs/compression.md): a route may keep its responses from
-- being compressed when webgres.compress is on.
ALTER TABLE webgres.routes ADD COLUMN compress boolean NOT NULL DEFAULT true;
COMMENT ON COLUMN webgres.routes.compress IS
  'Whether this route''s responses may be gzip-compressed when webgres.compress is on; false keeps them as they are.';

-- Static files (docs/static-files.md): a URL prefix served from a
-- directory by the workers, with the server's operating-system user, so
-- only superusers may add, change or remove a mount.
CREATE TABLE webgres.static_mounts (
	prefix			text PRIMARY KEY,
	directory		text NOT NULL,
	index_file		text DEFAULT 'index.html',
	spa_fallback	boolean NOT NULL DEFAULT false,
	dotfiles		boolean NOT NULL DEFAULT false,
	precompressed	boolean NOT NULL DEFAULT false,
	cache_control	text CONSTRAINT static_mounts_cache_control_check
						CHECK (cache_control ~ '^[ -~]+$'),
	owner			regrole NOT NULL DEFAULT current_user::regrole
);
COMMENT ON TABLE webgres.static_mounts IS
  'URL prefixes served as static files from a directory; superusers only. A route whose pattern matches a path answers it; the mount answers the other paths under its prefix.';
COMMENT ON COLUMN webgres.static_mounts.prefix IS
  'Path prefix: / or literal segments such as /app (no trailing slash); requests for the prefix itself are redirected to prefix/.';
COMMENT ON COLUMN webgres.static_mounts.directory IS
  'Absolute path of the directory served; nothing outside it is reachable (.., encoded forms, symbolic links pointing out).';
COMMENT ON COLUMN webgres.static_mounts.index_file IS
  'File answered for a path ending in /; NULL for none.';
COMMENT ON COLUMN webgres.static_mounts.spa_fallback IS
  'A GET or HEAD for a path under the prefix that names no file answers the index file (for single-page applications).';
COMMENT ON COLUMN webgres.static_mounts.dotfiles IS
  'Whether files and directories whose name starts with a dot are served; false answers 404.';
COMMENT ON COLUMN webgres.static_mounts.precompressed IS
  'Whether a file''s .gz sibling is sent, with Content-Encoding: gzip, to a client that accepts gzip.';
COMMENT ON COLUMN webgres.static_mounts.cache_control IS
  'Cache-Control sent with every file of the mount (304 answers too), such as no-cache to have browsers revalidate on each load; NULL sends none. Printable ASCII only.';
COMMENT ON COLUMN webgres.static_mounts.owner IS
  'The role whose path space the prefix is: routes of other roles may not match a path under it, and it may not cover theirs.';

SELECT pg_catalog.pg_extension_config_dump('webgres.static_mounts', '');
REVOKE ALL ON webgres.static_mounts FROM PUBLIC;

-- Superusers only, a well-formed prefix, an existing directory, and one
-- path space: no route of another role may match a path under the prefix.
CREATE FUNCTION webgres.static_mount_check() RETURNS trigger
	LANGUAGE plpgsql SET search_path = pg_catalog AS $fn$
DECLARE
	other record;
BEGIN
	IF current_setting('is_superuser') <> 'on' THEN
		RAISE EXCEPTION 'only a superuser can change webgres.static_mounts'
			USING ERRCODE = 'insufficient_privilege',
			      HINT = 'The workers read the files with the server''s operating-system user.';
	END IF;
	IF TG_OP = 'DELETE' THEN
		RETURN OLD;
	END IF;
	IF NEW.prefix !~ '^(/|(/[A-Za-z0-9_~!$&''()+,;=@-][A-Za-z0-9._~!$&''()+,;=@-]*)+)$' THEN
		RAISE EXCEPTION 'invalid static mount prefix "%"', NEW.prefix
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'Write / or literal segments such as /app or /assets/v1, with no trailing slash, no percent-encoding and no segment starting with a dot, colon or asterisk.';
	END IF;
	IF NEW.directory !~ '^/' OR NEW.directory ~ '(^|/)\.\.?(/|$)' THEN
		RAISE EXCEPTION 'invalid static mount directory "%"', NEW.directory
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'Give an absolute path with no . or .. segments.';
	END IF;
	-- A restore (pg_dump turns check_function_bodies off) may come first.
	IF current_setting('check_function_bodies') = 'on'
	   AND NOT coalesce((pg_stat_file(NEW.directory, true)).isdir, false) THEN
		RAISE EXCEPTION 'static mount directory "%" is not a directory the server can read', NEW.directory
			USING ERRCODE = 'undefined_file';
	END IF;
	IF NEW.index_file IS NOT NULL AND (NEW.index_file !~ '^[^/\\]+$' OR NEW.index_file ~ '^\.') THEN
		RAISE EXCEPTION 'invalid static mount index file "%"', NEW.index_file
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'Give a file name such as index.html, without a directory.';
	END IF;
	SELECT r.method, r.path, r.owner INTO other FROM webgres.routes r
	WHERE r.owner <> NEW.owner
	  AND (webgres.paths_overlap(r.path, NEW.prefix)
	       OR webgres.paths_overlap(r.path, rtrim(NEW.prefix, '/') || '/*'))
	LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'static mount "%" covers route % % of role "%"',
			NEW.prefix, coalesce(other.method, '*'), other.path, other.owner
			USING ERRCODE = 'insufficient_privilege',
			      HINT = 'A path belongs to one role: choose a prefix that no route of another role can match, or make the mount that role''s (the owner column).';
	END IF;
	RETURN NEW;
END
$fn$;
CREATE TRIGGER static_mount_check BEFORE INSERT OR UPDATE OR DELETE ON webgres.static_mounts
	FOR EACH ROW EXECUTE FUNCTION webgres.static_mount_check();
-- A change reaches the workers as a relcache invalidation, as for routes.
CREATE TRIGGER static_mounts_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON webgres.static_mounts
	FOR EACH STATEMENT EXECUTE FUNCTION webgres.routes_changed();

-- ==== CORS ====
-- Which other origins' pages may call a route from a browser (docs/cors.md).
-- A NULL column leaves the webgres.cors_* setting of the same name in force;
-- an empty cors_allowed_origins turns CORS off for the route.  The routes
-- trigger checks the entries and refuses credentials with any origin; the
-- constraint keeps the latter even for rows saved without the trigger.
ALTER TABLE webgres.routes
	ADD COLUMN cors_allowed_origins text[],
	ADD COLUMN cors_allowed_methods text[],
	ADD COLUMN cors_allowed_headers text[],
	ADD COLUMN cors_exposed_headers text[],
	ADD COLUMN cors_allow_credentials boolean,
	ADD COLUMN cors_max_age integer
		CONSTRAINT routes_cors_max_age_check CHECK (cors_max_age BETWEEN 0 AND 86400),
	ADD CONSTRAINT routes_cors_credentials_check
		CHECK (NOT (cors_allow_credentials AND '*' = ANY (cors_allowed_origins)));

COMMENT ON COLUMN webgres.routes.cors_allowed_origins IS
  'Origins whose pages may call this route from a browser, such as {https://app.example.com}; * stands for part of a host name or port, and * alone for any origin. NULL: webgres.cors_allowed_origins; empty: none.';
COMMENT ON COLUMN webgres.routes.cors_allowed_methods IS
  'Methods a CORS preflight may ask for; NULL: webgres.cors_allowed_methods (empty: whatever method the route takes).';
COMMENT ON COLUMN webgres.routes.cors_allowed_headers IS
  'Request headers a CORS preflight may ask for; NULL: webgres.cors_allowed_headers (empty: whatever it asks for).';
COMMENT ON COLUMN webgres.routes.cors_exposed_headers IS
  'Response headers a cross-origin script may read (Access-Control-Expose-Headers); NULL: webgres.cors_exposed_headers.';
COMMENT ON COLUMN webgres.routes.cors_allow_credentials IS
  'Whether allowed origins may send cookies and HTTP authentication; never with any origin (*). NULL: webgres.cors_allow_credentials.';
COMMENT ON COLUMN webgres.routes.cors_max_age IS
  'Seconds a browser may keep a preflight''s answer (Access-Control-Max-Age), 0 to 86400; NULL: webgres.cors_max_age.';
-- ==== authentication ====
-- A route's requests may carry a JSON Web Token, whose role claim chooses
-- the role the handler runs as (docs/authentication.md).

ALTER TABLE webgres.routes
	ADD COLUMN auth text NOT NULL DEFAULT 'none'
		CONSTRAINT routes_auth_check CHECK (auth IN ('none', 'optional', 'required'));
COMMENT ON COLUMN webgres.routes.auth IS
  'none: tokens are ignored and the handler runs as the owner; optional: a valid token''s role, else webgres.anon_role; required: a valid token''s role, else 401. The owner must be a member of the role.';
COMMENT ON COLUMN webgres.routes.handler IS
  'One SQL statement that may read the relation request(method, path, params, query_string, query, headers, body, tls, claims) and returns columns status, content_type, headers and body.';

CREATE FUNCTION webgres.jwt_sign(claims jsonb, ttl interval DEFAULT NULL) RETURNS text
	LANGUAGE c VOLATILE PARALLEL RESTRICTED
	AS 'MODULE_PATHNAME', 'webgres_jwt_sign';
COMMENT ON FUNCTION webgres.jwt_sign(jsonb, interval) IS
  'A JSON Web Token of the claims, signed HS256 with webgres.jwt_secret; with ttl, iat is now and exp now + ttl. Only roles granted EXECUTE by a superuser may call it.';
REVOKE ALL ON FUNCTION webgres.jwt_sign(jsonb, interval) FROM PUBLIC;

-- ==== observability: an OpenAPI 3.1 description of the routes ====
-- webgres.openapi() describes the routes the calling role can see (the
-- row security of webgres.routes applies); a route whose handler calls it
-- sees its owner's routes.


CREATE FUNCTION webgres.openapi_path(path text) RETURNS text
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	RETURN regexp_replace(regexp_replace(regexp_replace(path,
		'(^|/):([A-Za-z0-9_]+)', '\1{\2}', 'g'),
		'(^|/)\*([A-Za-z0-9_]+)$', '\1{\2}'),
		'(^|/)\*$', '\1{rest}');

COMMENT ON FUNCTION webgres.openapi_path(text) IS
  'A route path pattern as an OpenAPI path template: :name and *name become {name}, a bare * becomes {rest}.';

CREATE FUNCTION webgres.openapi(servers text[] DEFAULT NULL,
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
		SELECT r.id, r.path, r.priority, r.description, r.mode, r.handler, r.auth,
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
				'requestBody', CASE WHEN route.verb IN ('post', 'put', 'patch') THEN
					jsonb_build_object('required', false, 'content',
						jsonb_build_object('application/json', jsonb_build_object('schema', '{"type": "object", "additionalProperties": true}'::jsonb),
										   'application/x-www-form-urlencoded', jsonb_build_object('schema', '{"type": "object", "additionalProperties": {"type": "string"}}'::jsonb),
										   'text/plain', jsonb_build_object('schema', jsonb_build_object('type', 'string'))))
					END,
				'responses', jsonb_build_object(
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
					'default', jsonb_build_object('description', 'Another status the handler chose, or an error.'))
					|| CASE WHEN route.auth <> 'none' THEN jsonb_build_object('401', jsonb_build_object(
						'description', 'The token is missing (auth required), invalid or expired.')) ELSE '{}'::jsonb END,
				'security', CASE route.auth
					WHEN 'required' THEN security.schemes
					WHEN 'optional' THEN '[{}]'::jsonb || security.schemes END,
				'x-webgres-route-id', route.id,
				'x-webgres-mode', route.mode)) AS op
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
  'An OpenAPI 3.1 document describing the routes the calling role can see: paths (parameters as {name}), methods, summary and description from the description column, response content types (stream formats, text/event-stream, a content_type the handler names), and the bearer token (or cookie) security of routes with auth. servers: the base URLs clients use.';
