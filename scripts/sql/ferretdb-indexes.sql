-- Development database only (FerretDB v1 on PostgreSQL); production runs MongoDB 7, where none of this applies.
--
-- FerretDB 1.24 turns each index we declare into a btree over `(_jsonb -> 'field')`, but it filters with the
-- containment operator (`_jsonb -> 'field' @> '"value"'`), which a btree cannot serve: every read, even by `_id`,
-- was a sequential scan. A GIN index over the same expression serves `@>`. This file makes PostgreSQL add one
-- for every ascending field that a FerretDB index covers, now and whenever FerretDB creates an index later, and
-- empties FerretDB's non-unique btrees, which no FerretDB read uses (see platform_gin_for_btree).
-- FerretDB sends its queries as cached prepared statements whose key (`$1`) is a parameter; a generic plan
-- cannot match an expression index, so the server plans each execution with its values (ALTER SYSTEM and
-- a reload reach the connections FerretDB already holds).
-- Safe to run on every start: every statement is idempotent.

ALTER SYSTEM SET plan_cache_mode = force_custom_plan;
-- The planner picks between these indexes by statistics: gather them within seconds of a collection growing, not
-- once a minute (a bulk load is otherwise read through the wrong index for a while), and again each time the table
-- has grown by half: a collection's rows keep their shape as it grows, so its statistics change little in between.
-- At 10 % (PostgreSQL's default) the events table was analyzed every 10 s while it took 1,400 events/s (0.25 s of CPU
-- each at 150k rows, see platform_gin_for_btree); at 2 % every 5 s.
ALTER SYSTEM SET autovacuum_naptime = '5s';
ALTER SYSTEM SET autovacuum_analyze_scale_factor = 0.5;
ALTER SYSTEM SET autovacuum_analyze_threshold = 200;
-- No vacuum just because rows were inserted (PostgreSQL 13+ vacuums an append-only table every 20 % of growth, for
-- its visibility map, which no FerretDB read uses): with an index per field (GIN included) on the event tables those
-- vacuums ran every few seconds while events were written. Deleted and updated rows still trigger vacuum as usual.
-- pnpm bench sections events, back to back: new events 2,311-2,632 -> 2,790-2,963 req/s.
ALTER SYSTEM SET autovacuum_vacuum_insert_threshold = -1;
-- Deleted rows are vacuumed after 1 % of a table instead of 20 %. The events table takes an outbox marker per batch
-- and deletes it once the batch's events are out; the markers are found through the GIN index over `outboxMarker`,
-- which lists every dead one until a vacuum removes it, and a bitmap scan visits each of their heap pages. At 20 % of a
-- 150k-row table that was 20,205 dead markers on 14,047 pages: 21 ms a lookup from cache (1 s from disk), and the
-- marker deletes look them up ten times a second; PostgreSQL's CPU per new event grew with the table (0.09 -> 0.20 ms
-- from an empty table to 346k rows, pnpm bench 2026-11-26 12:35). At 1 % the dead ones stay in the low thousands.
ALTER SYSTEM SET autovacuum_vacuum_scale_factor = 0.01;
SELECT pg_reload_conf();

CREATE OR REPLACE FUNCTION platform_gin_for_btree(btree oid) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
  rel regclass;
  is_unique boolean;
  options int2vector;
  expr text;
  field text;
  gin_name text;
  definition text;
BEGIN
  -- A btree with a predicate is one this function made (below), or not FerretDB's: left as it is.
  SELECT i.indrelid::regclass, i.indisunique, i.indoption INTO rel, is_unique, options
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
   WHERE i.indexrelid = btree AND am.amname = 'btree' AND i.indpred IS NULL;
  IF rel IS NULL THEN
    RETURN;
  END IF;
  -- pg_get_indexdef(oid, column, pretty) gives one key expression, e.g. (_jsonb -> 'tenantId'::text)
  FOR k IN 1..(SELECT indnkeyatts FROM pg_index WHERE indexrelid = btree) LOOP
    expr := pg_get_indexdef(btree, k, true);
    field := substring(expr FROM $re$^\(?_jsonb -> '((?:[^']|'')+)'::text\)?$$re$);
    CONTINUE WHEN field IS NULL;
    -- A descending key (`createdAt: -1`) is there for order and ranges, which a GIN index cannot serve: no twin. (Its
    -- expression then has no statistics, which no filter of ours needs: nothing compares such a field for equality.)
    CONTINUE WHEN (options[k - 1] & 1) = 1;
    gin_name := left(split_part(rel::text, '.', 2), 40) || '_gin_' || substr(md5(rel::text || '/' || field), 1, 8);
    -- fastupdate off: a pending list (the default) is read in full by every lookup until a vacuum merges it, so
    -- reads by _id slowed tenfold after a bulk load; one scalar per row makes a direct insert cheap anyway.
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %s USING gin ((_jsonb -> %L) jsonb_path_ops) WITH (fastupdate = off)',
                   gin_name, rel, replace(field, '''''', ''''));
    -- Statistics once per expression: the GIN index's. ANALYZE computes every index expression for each sampled row,
    -- and the planner reads an expression's statistics from whichever index of the table has them; the btree's copy,
    -- and the whole document's (no filter compares `_jsonb` itself), only made each ANALYZE dearer (1.2 s -> 0.24-0.28 s
    -- of CPU on a 200k-row table). Under load the requests that waited during an automatic ANALYZE of the events table
    -- were the p99 of pnpm bench's half-load row (docs/performance.md). (A non-unique btree is emptied
    -- below: no row of it is sampled.)
    IF is_unique THEN
      EXECUTE format('ALTER INDEX %s ALTER COLUMN %s SET STATISTICS 0', btree::regclass, k);
    END IF;
  END LOOP;
  EXECUTE format('ALTER TABLE %s ALTER COLUMN _jsonb SET STATISTICS 0', rel);
  -- FerretDB never reads through a btree of its own but the unique one of `_id` (its `=` lookups): every other filter
  -- is a `@>`. pg_stat_user_indexes of the development database after a day of tests and benches: 197 non-unique
  -- btrees, not one scan. Each still cost every insert its entry (the events table's two compound ones, 60 MB each at
  -- 300k rows, were a quarter of an inserted row's time in PostgreSQL). A non-unique one is made again under the same
  -- name with a predicate no row satisfies, so FerretDB still finds (and drops) the index it created, and no insert
  -- writes to it. Unique ones stay: they are constraints.
  IF NOT is_unique THEN
    definition := pg_get_indexdef(btree);
    EXECUTE format('DROP INDEX %s', btree::regclass);
    EXECUTE definition || ' WHERE false';
  END IF;
EXCEPTION
  -- A collection dropped while this runs (tests drop databases all the time) fails with "could not open relation
  -- with OID" (an internal error, no specific code): nothing is left to index. Only a speed-up is lost otherwise.
  WHEN OTHERS THEN
    RAISE NOTICE 'no GIN index for %: %', btree, SQLERRM;
    RETURN;
END
$fn$;

CREATE OR REPLACE FUNCTION platform_gin_on_create_index() RETURNS event_trigger
LANGUAGE plpgsql AS $$
DECLARE
  cmd record;
BEGIN
  FOR cmd IN SELECT objid FROM pg_event_trigger_ddl_commands() WHERE object_type = 'index' LOOP
    PERFORM platform_gin_for_btree(cmd.objid);
  END LOOP;
END
$$;

DROP EVENT TRIGGER IF EXISTS platform_gin_on_create_index;
CREATE EVENT TRIGGER platform_gin_on_create_index ON ddl_command_end
  WHEN TAG IN ('CREATE INDEX')
  EXECUTE FUNCTION platform_gin_on_create_index();

-- GIN indexes made by an earlier version of this file, with a pending list.
DO $fix$
DECLARE
  idx record;
BEGIN
  FOR idx IN SELECT i.indexrelid::regclass AS name
               FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
              WHERE am.amname = 'gin' AND c.relname LIKE '%\_gin\_%'
                AND NOT coalesce(c.reloptions @> ARRAY['fastupdate=off'], false) LOOP
    EXECUTE format('ALTER INDEX %s SET (fastupdate = off)', idx.name);
  END LOOP;
END
$fix$;

-- Indexes that FerretDB created before this file ran.
SELECT platform_gin_for_btree(i.indexrelid)
  FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
   AND c.relname <> '_ferretdb_database_metadata';
