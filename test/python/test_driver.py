#!/usr/bin/python3
"""Drive a cosmosd node with the DataStax Python driver (Debian's
python3-cassandra) the way applications do: connect with the default
protocol negotiation, read schema metadata, use prepared statements with
routing keys, page, use the token map, LWTs, batches, every type, and map
errors to the driver's exceptions.

Usage: test_driver.py --host H --port P [--user U --password PW]
[--ca CA --cert CRT --key KEY]. With --user the driver logs in with its
PlainTextAuthProvider; with --ca it connects over TLS, trusting CA and
checking the node's name, and presents CRT/KEY when given. Exits non-zero
on the first failure, printing which check failed.
"""

import argparse
import datetime
import decimal
import logging
import math
import ssl
import sys
import traceback
import uuid

from cassandra import AlreadyExists, InvalidRequest, ProtocolVersion
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy
from cassandra.protocol import SyntaxException
from cassandra.query import (BatchStatement, BatchType, SimpleStatement,
                             dict_factory)
from cassandra.util import Date, Duration, Time

KS = "pydriver"


class Recorder(logging.Handler):
    """Keeps the driver's log messages, to see the protocol downgrade."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []
        self.problems = []

    def emit(self, record):
        self.messages.append(record.getMessage())
        if record.levelno >= logging.WARNING and "Downgrading core protocol version" not in record.getMessage():
            self.problems.append("%s: %s" % (record.levelname, record.getMessage()))


RECORDER = Recorder()
logging.getLogger("cassandra").addHandler(RECORDER)
logging.getLogger("cassandra").setLevel(logging.INFO)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def check_eq(got, want, what):
    if got != want:
        raise AssertionError("%s: got %r, want %r" % (what, got, want))


def expect_error(session, query, exc_type, fragment=""):
    try:
        session.execute(query)
    except exc_type as e:
        if fragment and fragment not in str(e):
            raise AssertionError("%s: error %r lacks %r" % (query, str(e), fragment))
        return e
    except Exception as e:  # the wrong exception type
        raise AssertionError("%s: raised %s %r, want %s" % (query, type(e).__name__, e, exc_type.__name__))
    raise AssertionError("%s: no error, want %s" % (query, exc_type.__name__))


class Suite:
    def __init__(self, host, port, user=None, password=None, ca=None, cert=None, key=None):
        self.host, self.port = host, port
        self.cluster = None
        self.session = None
        # Options every connection of the suite uses: a login and TLS,
        # when given.
        self.secure = {}
        if user is not None:
            self.secure["auth_provider"] = PlainTextAuthProvider(username=user, password=password)
        if ca is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.load_verify_locations(ca)
            if cert is not None:
                ctx.load_cert_chain(cert, key)
            self.secure["ssl_context"] = ctx

    def connect(self, **kw):
        profile = ExecutionProfile(
            load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy()),
            row_factory=dict_factory,
            request_timeout=20)
        cluster = Cluster([self.host], port=self.port, connect_timeout=30, control_connection_timeout=30,
                          execution_profiles={EXEC_PROFILE_DEFAULT: profile}, **self.secure, **kw)
        return cluster, cluster.connect()

    # --- connection and negotiation -------------------------------------

    def test_connect(self):
        # No protocol_version given: the driver starts above v4 (DSE_V2 or
        # v5) and must fall back to v4 on the server's protocol error.
        self.cluster, self.session = self.connect()
        check_eq(self.cluster.protocol_version, ProtocolVersion.V4, "negotiated protocol version")
        downgrades = [m for m in RECORDER.messages if "Downgrading core protocol version" in m]
        check(downgrades, "the driver did not negotiate down to v4; log: %r" % RECORDER.messages)
        print("     %s" % "\n     ".join(downgrades))
        row = self.session.execute("SELECT release_version, partitioner, data_center FROM system.local WHERE key = 'local'").one()
        check(row["release_version"].startswith("3.11"), "release_version %r" % row["release_version"])
        check_eq(row["partitioner"], "org.apache.cassandra.dht.Murmur3Partitioner", "partitioner")
        hosts = self.cluster.metadata.all_hosts()
        check_eq(len(hosts), 1, "hosts")
        check_eq(hosts[0].datacenter, "datacenter1", "host datacenter")
        self.session.execute("DROP KEYSPACE IF EXISTS %s" % KS)
        self.session.execute("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}" % KS)

    def test_compression(self):
        try:
            import lz4  # noqa: F401
            name = "lz4"
        except ImportError:
            try:
                import snappy  # noqa: F401
                name = "snappy"
            except ImportError:
                print("SKIP compression: neither the lz4 nor the snappy Python module is installed")
                return
        cluster, session = self.connect(compression=name)
        try:
            rows = list(session.execute("SELECT keyspace_name FROM system_schema.keyspaces"))
            check(len(rows) > 0, "rows over %s" % name)
        finally:
            cluster.shutdown()

    # --- schema metadata ------------------------------------------------

    def test_metadata(self):
        s = self.session
        s.execute("""CREATE TABLE %s.meta (a int, b text, c1 int, c2 timestamp, st text STATIC, l list<int>,
                     m map<text, frozen<set<int>>>, tp tuple<int, text>, v text,
                     PRIMARY KEY ((a, b), c1, c2)) WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC)""" % KS)
        ks = self.cluster.metadata.keyspaces[KS]
        check_eq(ks.replication_strategy.name, "SimpleStrategy", "strategy")
        t = ks.tables["meta"]
        check_eq([c.name for c in t.partition_key], ["a", "b"], "partition key")
        check_eq([c.name for c in t.clustering_key], ["c1", "c2"], "clustering key")
        check_eq([c.is_reversed for c in t.clustering_key], [False, True], "clustering order")
        types = {name: c.cql_type for name, c in t.columns.items()}
        check_eq(types, {"a": "int", "b": "text", "c1": "int", "c2": "timestamp", "st": "text", "l": "list<int>",
                         "m": "map<text, frozen<set<int>>>", "tp": "frozen<tuple<int, text>>", "v": "text"}, "column types")
        check(t.columns["st"].is_static, "st is static")
        cql = t.export_as_string()
        for fragment in ("CREATE TABLE %s.meta" % KS, "PRIMARY KEY ((a, b), c1, c2)", "CLUSTERING ORDER BY (c1 ASC, c2 DESC)", "st text static"):
            check(fragment in cql, "export_as_string lacks %r:\n%s" % (fragment, cql))
        check("CREATE KEYSPACE %s" % KS in ks.export_as_string(), "keyspace export")
        # ALTER is seen after the schema change.
        s.execute("ALTER TABLE %s.meta ADD extra int" % KS)
        check("extra" in self.cluster.metadata.keyspaces[KS].tables["meta"].columns, "ALTER not in metadata")

    # --- prepared statements and routing ---------------------------------

    def test_prepared_routing(self):
        s = self.session
        s.execute("CREATE TABLE %s.comp (a int, b text, c int, v int, PRIMARY KEY ((a, b), c))" % KS)
        ins = s.prepare("INSERT INTO %s.comp (a, b, c, v) VALUES (?, ?, ?, ?)" % KS)
        check_eq(ins.routing_key_indexes, [0, 1], "insert routing key indexes")
        bound = ins.bind((1, "a", 1, 10))
        # Composite routing key: [len][bytes][0] per component.
        check_eq(bound.routing_key, b"\x00\x04\x00\x00\x00\x01\x00\x00\x01a\x00", "routing key")
        s.execute(bound)
        sel = s.prepare("SELECT v FROM %s.comp WHERE b = ? AND a = ? AND c = ?" % KS)
        check_eq(sel.routing_key_indexes, [1, 0], "select routing key indexes (markers out of order)")
        check_eq(s.execute(sel, ("a", 1, 1)).one()["v"], 10, "prepared read")
        # Token map: the key's token is owned by the node.
        tm = self.cluster.metadata.token_map
        check(tm is not None and len(tm.ring) > 0, "token map is empty")
        replicas = self.cluster.metadata.get_replicas(KS, bound.routing_key)
        check_eq([h.address for h in replicas], [self.host], "replicas of the key")
        token = self.cluster.metadata.token_map.token_class.from_key(bound.routing_key)
        got = s.execute("SELECT token(a, b) AS t FROM %s.comp WHERE a = 1 AND b = 'a'" % KS).one()["t"]
        check_eq(got, token.value, "server token vs driver murmur3")
        check_eq(got, 6516349416904725244, "token of (1, 'a')")
        # A prepared SELECT * sees a column added after it was prepared
        # (the node invalidates it; the driver prepares again).
        star = s.prepare("SELECT * FROM %s.comp WHERE a = ? AND b = ?" % KS)
        check_eq(sorted(s.execute(star, (1, "a")).one()), ["a", "b", "c", "v"], "columns before ALTER")
        s.execute("ALTER TABLE %s.comp ADD w int" % KS)
        check_eq(sorted(s.execute(star, (1, "a")).one()), ["a", "b", "c", "v", "w"], "columns after ALTER")

    # --- paging ----------------------------------------------------------

    def test_paging(self):
        s = self.session
        s.execute("CREATE TABLE %s.pages (k int, c int, v text, PRIMARY KEY (k, c))" % KS)
        ins = s.prepare("INSERT INTO %s.pages (k, c, v) VALUES (?, ?, ?)" % KS)
        for k in range(5):
            for c in range(50):
                s.execute(ins, (k, c, "v%d" % c))
        stmt = SimpleStatement("SELECT k, c FROM %s.pages" % KS, fetch_size=33)
        rows = list(s.execute(stmt))
        check_eq(len(rows), 250, "rows over pages")
        check_eq(len({(r["k"], r["c"]) for r in rows}), 250, "distinct rows over pages")
        one = SimpleStatement("SELECT c FROM %s.pages WHERE k = 3" % KS, fetch_size=20)
        check_eq([r["c"] for r in s.execute(one)], list(range(50)), "one partition in clustering order")
        # Resume from a saved paging state.
        rs = s.execute(one)
        first = [r["c"] for r in rs.current_rows]
        check_eq(first, list(range(20)), "first page")
        state = rs.paging_state
        check(state is not None, "no paging state")
        rs2 = s.execute(one, paging_state=state)
        check_eq([r["c"] for r in rs2.current_rows], list(range(20, 40)), "resumed page")
        # Prepared statements page too.
        ps = s.prepare("SELECT c FROM %s.pages WHERE k = ?" % KS)
        ps.fetch_size = 7
        check_eq([r["c"] for r in s.execute(ps, (4,))], list(range(50)), "prepared paging")
        rs = s.execute(ps, (4,))
        rs3 = s.execute(ps, (4,), paging_state=rs.paging_state)
        check_eq(rs3.current_rows[0]["c"], 7, "prepared resume")

    # --- LWT and batches --------------------------------------------------

    def test_lwt(self):
        s = self.session
        s.execute("CREATE TABLE %s.lwt (k int PRIMARY KEY, v text, n int)" % KS)
        rs = s.execute("INSERT INTO %s.lwt (k, v, n) VALUES (1, 'a', 1) IF NOT EXISTS" % KS)
        check(rs.was_applied, "first IF NOT EXISTS applied")
        rs = s.execute("INSERT INTO %s.lwt (k, v, n) VALUES (1, 'b', 2) IF NOT EXISTS" % KS)
        check(not rs.was_applied, "second IF NOT EXISTS not applied")
        row = rs.one()
        check_eq((row["[applied]"], row["v"], row["n"]), (False, "a", 1), "existing row returned")
        upd = s.prepare("UPDATE %s.lwt SET v = ? WHERE k = ? IF v = ?" % KS)
        rs = s.execute(upd, ("c", 1, "zzz"))
        check(not rs.was_applied, "prepared condition fails")
        check_eq(rs.one()["v"], "a", "current value of a failed prepared condition")
        check(s.execute(upd, ("c", 1, "a")).was_applied, "prepared condition holds")
        check(s.execute("DELETE FROM %s.lwt WHERE k = 1 IF EXISTS" % KS).was_applied, "DELETE IF EXISTS")
        check(not s.execute("DELETE FROM %s.lwt WHERE k = 1 IF EXISTS" % KS).was_applied, "DELETE IF EXISTS again")

    def test_batches(self):
        s = self.session
        s.execute("CREATE TABLE %s.bt (k int, c int, v text, PRIMARY KEY (k, c))" % KS)
        s.execute("CREATE TABLE %s.bc (k int PRIMARY KEY, n counter)" % KS)
        ins = s.prepare("INSERT INTO %s.bt (k, c, v) VALUES (?, ?, ?)" % KS)
        for bt in (BatchType.LOGGED, BatchType.UNLOGGED):
            b = BatchStatement(batch_type=bt)
            b.add(ins, (int(bt == BatchType.UNLOGGED), 1, "p"))
            b.add(SimpleStatement("INSERT INTO %s.bt (k, c, v) VALUES (%%s, 2, 'q')" % KS), (int(bt == BatchType.UNLOGGED),))
            s.execute(b)
        rows = list(s.execute("SELECT k, c, v FROM %s.bt" % KS))
        check_eq(len(rows), 4, "batch rows")
        cb = BatchStatement(batch_type=BatchType.COUNTER)
        cb.add(SimpleStatement("UPDATE %s.bc SET n = n + 2 WHERE k = 1" % KS))
        cb.add(SimpleStatement("UPDATE %s.bc SET n = n + 3 WHERE k = 1" % KS))
        s.execute(cb)
        check_eq(s.execute("SELECT n FROM %s.bc WHERE k = 1" % KS).one()["n"], 5, "counter batch")
        lb = BatchStatement()
        lb.add(SimpleStatement("INSERT INTO %s.bt (k, c, v) VALUES (9, 1, 'x') IF NOT EXISTS" % KS))
        lb.add(ins, (9, 2, "y"))
        check(s.execute(lb).was_applied, "conditional batch applied")
        check(not s.execute(lb).was_applied, "conditional batch not applied again")

    # --- types ------------------------------------------------------------

    def test_types(self):
        s = self.session
        s.execute("""CREATE TABLE %s.types (k int PRIMARY KEY, a ascii, bi bigint, bl blob, bo boolean, d date, de decimal,
                     do double, f float, i inet, i6 inet, n int, si smallint, tx text, tm time, ts timestamp, tu timeuuid,
                     ti tinyint, u uuid, vi varint, du duration, l list<text>, st set<int>, m map<text, int>,
                     tp tuple<int, text, double>, fl frozen<list<frozen<set<int>>>>, fm frozen<map<int, frozen<list<text>>>>)""" % KS)
        values = {
            "k": 1, "a": "ascii", "bi": -9223372036854775808, "bl": b"\x00\xff", "bo": True,
            "d": datetime.date(1969, 7, 20), "de": decimal.Decimal("-123456789.987654321"), "do": float("-inf"),
            "f": 1.5, "i": "1.2.3.4", "i6": "::1", "n": -2147483648, "si": 32767, "tx": "日本語 ✓", "tm": datetime.time(13, 30, 54, 234000),
            "ts": datetime.datetime(1960, 1, 2, 3, 4, 5, 678000), "tu": uuid.UUID("50554d6e-29bb-11e5-b345-feff819cdc9f"),
            "ti": -128, "u": uuid.UUID("123e4567-e89b-42d3-a456-426614174000"), "vi": -(2 ** 100),
            "du": Duration(1, 2, 3), "l": ["x", "", "y"], "st": {3, 1, 2}, "m": {"a": 1, "b": -1},
            "tp": (7, "seven", 7.5), "fl": [{1, 2}, set()], "fm": {1: ["a"], 2: []},
        }
        cols = sorted(values)
        ps = s.prepare("INSERT INTO %s.types (%s) VALUES (%s)" % (KS, ", ".join(cols), ", ".join("?" * len(cols))))
        s.execute(ps, [values[c] for c in cols])
        row = s.execute("SELECT * FROM %s.types WHERE k = 1" % KS).one()
        norm = {
            "d": lambda v: v.date() if isinstance(v, Date) else v,
            "tm": lambda v: v.time() if isinstance(v, Time) else v,
            "st": set, "m": dict, "fl": lambda v: [set(x) for x in v], "fm": lambda v: {k: list(x) for k, x in v.items()},
        }
        for c in cols:
            got = norm.get(c, lambda v: v)(row[c])
            check_eq(got, values[c], "type round trip of %s" % c)
        # Edge values: NaN, empty strings and blobs, nulls.
        s.execute(ps, [{"k": 2, "do": float("nan"), "tx": "", "bl": b"", "a": ""}.get(c) for c in cols])
        row = s.execute("SELECT do, tx, bl, a, n FROM %s.types WHERE k = 2" % KS).one()
        check(math.isnan(row["do"]), "NaN round trip")
        check_eq((row["tx"], row["bl"], row["a"], row["n"]), ("", b"", "", None), "empty values and null")

    # --- errors -----------------------------------------------------------

    def test_errors(self):
        s = self.session
        e = expect_error(s, "CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}" % KS, AlreadyExists)
        check_eq((e.keyspace, e.table), (KS, ""), "AlreadyExists keyspace fields (empty table)")
        e = expect_error(s, "CREATE TABLE %s.lwt (k int PRIMARY KEY)" % KS, AlreadyExists)
        check_eq((e.keyspace, e.table), (KS, "lwt"), "AlreadyExists table fields")
        expect_error(s, "SELECT * FROM %s.nosuch" % KS, InvalidRequest, "unconfigured table nosuch")
        expect_error(s, "SELECT nosuch FROM %s.lwt" % KS, InvalidRequest, "Undefined column name nosuch")
        expect_error(s, "SELECT * FROM %s.lwt WHERE v = 'a'" % KS, InvalidRequest, "ALLOW FILTERING")
        expect_error(s, "SELEC * FROM x", SyntaxException)
        expect_error(s, "INSERT INTO %s.lwt (k, v) VALUES ('notanint', 'x')" % KS, InvalidRequest)
        # The session keeps working.
        check_eq(s.execute("SELECT count(*) AS n FROM %s.lwt" % KS).one()["n"], 0, "count after errors")

    def test_driver_log(self):
        # Schema parsing, control connection and pools logged no problem
        # (a table the driver cannot parse is only logged).
        check(not RECORDER.problems, "driver warnings/errors:\n" + "\n".join(RECORDER.problems))

    def run(self):
        tests = [self.test_connect, self.test_compression, self.test_metadata, self.test_prepared_routing,
                 self.test_paging, self.test_lwt, self.test_batches, self.test_types, self.test_errors,
                 self.test_driver_log]
        try:
            for t in tests:
                t()
                print("ok   %s" % t.__name__)
        except Exception:
            print("FAIL %s" % t.__name__)
            traceback.print_exc()
            return 1
        finally:
            if self.cluster is not None:
                try:
                    self.session.execute("DROP KEYSPACE IF EXISTS %s" % KS)
                finally:
                    self.cluster.shutdown()
        return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--user", help="log in as this role (PlainTextAuthProvider)")
    ap.add_argument("--password", help="the role's password")
    ap.add_argument("--ca", help="connect over TLS, trusting this CA certificate")
    ap.add_argument("--cert", help="client certificate to present over TLS")
    ap.add_argument("--key", help="the client certificate's key")
    args = ap.parse_args()
    if (args.user is None) != (args.password is None):
        ap.error("--user and --password go together")
    if (args.cert is None) != (args.key is None) or (args.cert is not None and args.ca is None):
        ap.error("--cert and --key go together, with --ca")
    return Suite(args.host, args.port, args.user, args.password, args.ca, args.cert, args.key).run()


if __name__ == "__main__":
    sys.exit(main())
