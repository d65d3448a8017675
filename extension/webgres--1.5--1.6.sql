-- webgres 1.5 to 1.6
-- Every change here is made in webgres--1.6.sql too.

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.6'" to load this file. \quit
