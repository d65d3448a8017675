-- The SQL of /fortunes: every Fortune row, no ORDER BY (TechEmpower
-- "fortune"; adding the extra row, sorting and rendering HTML are the
-- server's work and are not part of this reference).
SELECT id, message FROM fortune;
