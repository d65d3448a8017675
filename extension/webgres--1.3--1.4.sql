-- webgres 1.3 to 1.4
-- Every change here is made in webgres--1.4.sql too.

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.4'" to load this file. \quit
