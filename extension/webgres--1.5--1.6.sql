-- webgres 1.5 to 1.6
-- Every change here is made in webgres--1.6.sql too.

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.6'" to load this file. \quit

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
		CHECK (upgrade IS NULL OR method = 'GET'),
	ADD CONSTRAINT routes_upgrade_handlers_check
		CHECK (upgrade IS NOT NULL OR (on_message IS NULL AND on_close IS NULL));
COMMENT ON COLUMN webgres.routes.upgrade IS
  'websocket: the route''s GET requests open a WebSocket; the handler runs when it opens (status, channels, body: a first message). NULL: an ordinary route.';
COMMENT ON COLUMN webgres.routes.on_message IS
  'For a WebSocket route: one SQL statement run for each message the client sends, with $1 the connection id (bigint), $2 a text message (else NULL) and $3 a binary one (else NULL); each row''s first column (text or bytea) is sent back as a message.';
COMMENT ON COLUMN webgres.routes.on_close IS
  'For a WebSocket route: one SQL statement run once the socket has closed, with $1 the connection id (bigint) and $2 the close code (integer).';
