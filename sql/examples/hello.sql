-- An example route: GET /hello/:name answers an HTML greeting.
-- The name comes from the path; webgres.html_escape keeps it inert.
DELETE FROM webgres.routes WHERE path = '/hello/:name';
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/hello/:name', $$
	SELECT 'text/html; charset=utf-8' AS content_type,
	       '<!DOCTYPE html><p>Hello, <b>' || webgres.html_escape(request.params->>'name') || '</b>!</p>' AS body
	FROM request
$$);
