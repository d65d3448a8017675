-- webgres 1.1 to 1.2

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.2'" to load this file. \quit
