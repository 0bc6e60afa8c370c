"""The transaction tables of the warehouse's metastore server, which its table locks need.

A publish takes the metastore's exclusive lock on its table (zipper.core.hms, `exclusive_lock`).
Hive's metastore keeps such locks in its transaction tables (`HIVE_LOCKS`, `NEXT_LOCK_ID`, ...):
Hive's schema scripts create them (`hive-txn-schema-2.3.0.<database>.sql`, run by `schematool`),
DataNucleus' automatic schema does not. So the server's starter creates the ones missing, in one
transaction, before the metastore serves: a new warehouse gets them, and so does one that an
earlier zipper made. Measured on Derby: about a second for a new database, a few milliseconds
to find them in one that has them.

The tables are those Hive 2.3's own Derby set-up (`TxnDbUtil.prepDb`) makes, with its columns;
only the type of a compaction's binary column differs by database. PostgreSQL folds the unquoted
names to lower case, as Hive's PostgreSQL script and its queries do.

The server's settings beside them: the transaction store's JDBC pool (HikariCP, which Spark
ships; Hive's default, BoneCP, is not among Spark's jars), and the housekeeping that removes a
lock whose client was killed before it could release it (`hive.txn.timeout`)."""

from __future__ import annotations

from collections.abc import Mapping

# A killed client's lock is removed once it has not been heartbeated for this long; checked every
# REAPER_INTERVAL. A publish holds its lock for milliseconds (a rebuild's, of many partitions, a
# second or two), and zipper does not heartbeat it: the timeout must stay well above that.
LOCK_TIMEOUT = "60s"
REAPER_INTERVAL = "10s"
HOUSEKEEPER = "org.apache.hadoop.hive.ql.txn.AcidHouseKeeperService"

SETTINGS: Mapping[str, str] = {
    "datanucleus.connectionPoolingType": "HikariCP",
    # what Hive's housekeeping asks of the server's configuration before it starts
    "hive.support.concurrency": "true",
    "hive.txn.manager": "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager",
    "hive.txn.timeout": LOCK_TIMEOUT,
    "hive.timedout.txn.reaper.start": REAPER_INTERVAL,
    "hive.timedout.txn.reaper.interval": REAPER_INTERVAL,
}

BINARY = {"derby": "varchar(2048) for bit data", "postgresql": "bytea"}

# name -> the statements that make it (a table's seed row with it), in order of their references
TABLES: dict[str, tuple[str, ...]] = {
    "TXNS": (
        "CREATE TABLE TXNS (TXN_ID bigint PRIMARY KEY, TXN_STATE char(1) NOT NULL, TXN_STARTED bigint NOT NULL,"
        " TXN_LAST_HEARTBEAT bigint NOT NULL, TXN_USER varchar(128) NOT NULL, TXN_HOST varchar(128) NOT NULL)",
    ),
    "TXN_COMPONENTS": (
        "CREATE TABLE TXN_COMPONENTS (TC_TXNID bigint REFERENCES TXNS (TXN_ID), TC_DATABASE varchar(128) NOT NULL,"
        " TC_TABLE varchar(128), TC_PARTITION varchar(767), TC_OPERATION_TYPE char(1) NOT NULL)",
    ),
    "COMPLETED_TXN_COMPONENTS": (
        "CREATE TABLE COMPLETED_TXN_COMPONENTS (CTC_TXNID bigint, CTC_DATABASE varchar(128) NOT NULL,"
        " CTC_TABLE varchar(128), CTC_PARTITION varchar(767))",
    ),
    "NEXT_TXN_ID": ("CREATE TABLE NEXT_TXN_ID (NTXN_NEXT bigint NOT NULL)", "INSERT INTO NEXT_TXN_ID VALUES (1)"),
    "HIVE_LOCKS": (
        "CREATE TABLE HIVE_LOCKS (HL_LOCK_EXT_ID bigint NOT NULL, HL_LOCK_INT_ID bigint NOT NULL, HL_TXNID bigint,"
        " HL_DB varchar(128) NOT NULL, HL_TABLE varchar(128), HL_PARTITION varchar(767),"
        " HL_LOCK_STATE char(1) NOT NULL, HL_LOCK_TYPE char(1) NOT NULL, HL_LAST_HEARTBEAT bigint NOT NULL,"
        " HL_ACQUIRED_AT bigint, HL_USER varchar(128) NOT NULL, HL_HOST varchar(128) NOT NULL,"
        " HL_HEARTBEAT_COUNT integer, HL_AGENT_INFO varchar(128), HL_BLOCKEDBY_EXT_ID bigint,"
        " HL_BLOCKEDBY_INT_ID bigint, PRIMARY KEY (HL_LOCK_EXT_ID, HL_LOCK_INT_ID))",
        "CREATE INDEX HL_TXNID_INDEX ON HIVE_LOCKS (HL_TXNID)",
    ),
    "NEXT_LOCK_ID": ("CREATE TABLE NEXT_LOCK_ID (NL_NEXT bigint NOT NULL)", "INSERT INTO NEXT_LOCK_ID VALUES (1)"),
    "COMPACTION_QUEUE": (
        "CREATE TABLE COMPACTION_QUEUE (CQ_ID bigint PRIMARY KEY, CQ_DATABASE varchar(128) NOT NULL,"
        " CQ_TABLE varchar(128) NOT NULL, CQ_PARTITION varchar(767), CQ_STATE char(1) NOT NULL,"
        " CQ_TYPE char(1) NOT NULL, CQ_TBLPROPERTIES varchar(2048), CQ_WORKER_ID varchar(128), CQ_START bigint,"
        " CQ_RUN_AS varchar(128), CQ_HIGHEST_TXN_ID bigint, CQ_META_INFO {binary}, CQ_HADOOP_JOB_ID varchar(32))",
    ),
    "NEXT_COMPACTION_QUEUE_ID": (
        "CREATE TABLE NEXT_COMPACTION_QUEUE_ID (NCQ_NEXT bigint NOT NULL)",
        "INSERT INTO NEXT_COMPACTION_QUEUE_ID VALUES (1)",
    ),
    "COMPLETED_COMPACTIONS": (
        "CREATE TABLE COMPLETED_COMPACTIONS (CC_ID bigint PRIMARY KEY, CC_DATABASE varchar(128) NOT NULL,"
        " CC_TABLE varchar(128) NOT NULL, CC_PARTITION varchar(767), CC_STATE char(1) NOT NULL,"
        " CC_TYPE char(1) NOT NULL, CC_TBLPROPERTIES varchar(2048), CC_WORKER_ID varchar(128), CC_START bigint,"
        " CC_END bigint, CC_RUN_AS varchar(128), CC_HIGHEST_TXN_ID bigint, CC_META_INFO {binary},"
        " CC_HADOOP_JOB_ID varchar(32))",
    ),
    "AUX_TABLE": (
        "CREATE TABLE AUX_TABLE (MT_KEY1 varchar(128) NOT NULL, MT_KEY2 bigint NOT NULL, MT_COMMENT varchar(255),"
        " PRIMARY KEY (MT_KEY1, MT_KEY2))",
    ),
    "WRITE_SET": (
        "CREATE TABLE WRITE_SET (WS_DATABASE varchar(128) NOT NULL, WS_TABLE varchar(128) NOT NULL,"
        " WS_PARTITION varchar(767), WS_TXNID bigint NOT NULL, WS_COMMIT_ID bigint NOT NULL,"
        " WS_OPERATION_TYPE char(1) NOT NULL)",
    ),
}


def dialect(jdbc_url: str) -> str:
    """`derby` or `postgresql`, the databases the warehouse's server keeps its metadata in."""
    return "postgresql" if jdbc_url.startswith("jdbc:postgresql:") else "derby"


def statements(missing: list[str], kind: str) -> list[str]:
    """The statements that create the `missing` tables, in TABLES' order."""
    return [sql.format(binary=BINARY[kind]) for name in TABLES if name in missing for sql in TABLES[name]]


def ensure_tables(jvm, conf) -> list[str]:
    """Create the transaction tables the metastore's database lacks, all in one transaction, over
    JDBC in the server's JVM (its HiveConf's connection settings); the names created."""
    url = conf.get("javax.jdo.option.ConnectionURL")
    user = conf.get("javax.jdo.option.ConnectionUserName") or ""
    password = conf.get("javax.jdo.option.ConnectionPassword") or ""
    connection = jvm.java.sql.DriverManager.getConnection(url, user, password)
    try:
        meta = connection.getMetaData()
        schema = connection.getSchema()
        missing = []
        for name in TABLES:
            stored = name.lower() if meta.storesLowerCaseIdentifiers() else name
            found = meta.getTables(None, schema, stored, None)
            try:
                if not found.next():
                    missing.append(name)
            finally:
                found.close()
        if missing:
            connection.setAutoCommit(False)
            statement = connection.createStatement()
            try:
                for sql in statements(missing, dialect(url)):
                    statement.execute(sql)
                connection.commit()
            except BaseException:
                connection.rollback()  # none or all of them
                raise
            finally:
                statement.close()
        return missing
    finally:
        connection.close()


def start_housekeeping(jvm, conf) -> None:
    """Hive's housekeeping of transactions and locks, as a metastore with its compactor on runs it:
    every REAPER_INTERVAL, locks not heartbeated for LOCK_TIMEOUT (a killed client's) are removed."""
    jvm.org.apache.hadoop.hive.ql.txn.AcidHouseKeeperService().start(conf)
