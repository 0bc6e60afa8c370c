"""Hive's metastore server on the loopback interface alone, set up through py4j.

Hive 2.3's `HiveMetaStore.main` serves on every interface: its `startMetaStore` takes the socket
from `HiveAuthUtils.getServerSocket(null, port)`, whose null host is the wildcard address, and
2.3.10's HiveConf has no setting for the metastore's address (only HiveServer2's
`hive.server2.thrift.bind.host`). No JVM option changes what `new InetSocketAddress(port)` binds.

So the server's JVM runs py4j's `GatewayServer` (pyspark's py4j jar), which listens on 127.0.0.1
and takes only callers with the random token it prints to its starter's pipe. The starter connects
and builds what `startMetaStore` builds with Hive's defaults, in its order: the retrying
`HMSHandler` (which opens the database, creating its schema; the transaction tables of its locks
are created first, zipper.runtime.metastore_txn), the set-UGI processor and transport,
a `TThreadPoolServer` with the configured worker threads and Hive's connection-closing event
handler, but on a socket bound to 127.0.0.1 (port 0: the kernel picks a free one, so no race for
it). `serve()` runs on a thread of the JVM's own (a `java.beans.EventHandler` is the Runnable, so
no Python stays behind), with Hive's housekeeping of transactions and locks beside it, as a
metastore with its compactor on runs it; then the gateway is shut down. What is left is a Java process serving the
metastore on loopback alone and nothing else; SIGTERM ends it as it ended Hive's own main, whose
shutdown hooks only log.

Only a JRE is needed: nothing is compiled. Settings zipper never makes and this does not
reproduce (SASL, SSL, framed transport) are refused in one line."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from zipper.runtime import metastore_txn
from zipper.runtime.processes import LOCAL_HOST

GATEWAY_MAIN = "py4j.GatewayServer"
HIVE = "org.apache.hadoop.hive"


class ServerFailed(Exception):
    """The server did not come up; the message says why (a Java failure's trace is in the log)."""


def gateway_command(java: str, options: Sequence[str], classpath: str) -> list[str]:
    """The server JVM's argv: py4j's gateway on an ephemeral loopback port, with a token."""
    return [java, *options, "-cp", classpath, GATEWAY_MAIN, "--enable-auth", "0"]


def launch(
    command: list[str],
    settings: Mapping[str, str],
    log_path: Path,
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout_s: float,
) -> tuple[subprocess.Popen, int]:
    """Start the server JVM, set Hive's metastore up in it with `settings` (the --hiveconf pairs
    of Hive's main) and serve it on 127.0.0.1; (the process, the thrift port). On any failure the
    process is ended and ServerFailed (or the interruption) raised."""
    deadline = time.monotonic() + timeout_s
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            command,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,  # the gateway's port and token, read by this process alone
            stderr=log,
            cwd=cwd,
            start_new_session=True,  # outlives the command that started it, and its Ctrl-C
        )
    try:
        gateway_port, token = _handshake(process, deadline)
        with _gateway(gateway_port, token, deadline, log_path) as gateway:
            port = _serve(gateway, settings, log_path)
        return process, port
    except BaseException:
        _end(process)
        raise
    finally:
        process.stdout.close()


def _handshake(process: subprocess.Popen, deadline: float) -> tuple[int, str]:
    """The two lines py4j's gateway prints once it listens: its port and its token."""
    lines: list[bytes] = []
    pending = b""
    fd = process.stdout.fileno()
    while len(lines) < 2:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            raise ServerFailed("its JVM did not start in time")
        chunk = os.read(fd, 4096)
        if not chunk:
            raise ServerFailed(f"its JVM exited ({process.wait()}) before it listened")
        pending += chunk
        while b"\n" in pending and len(lines) < 2:
            line, pending = pending.split(b"\n", 1)
            lines.append(line.strip())
    return int(lines[0]), lines[1].decode()


@contextlib.contextmanager
def _gateway(port: int, token: str, deadline: float, log_path: Path) -> Iterator:
    """A py4j client of the server's gateway, shut down at the end (it stops listening). A failure
    in the JVM is written to the log, its trace whole, as Hive's main would."""
    from py4j.java_gateway import GatewayParameters, JavaGateway  # only a starter needs it

    parameters = GatewayParameters(
        port=port, auth_token=token, read_timeout=max(1.0, deadline - time.monotonic()), auto_convert=False
    )
    gateway = JavaGateway(gateway_parameters=parameters)
    try:
        yield gateway
    except ServerFailed:
        raise
    except Exception as error:
        with open(log_path, "a") as log:
            log.write(f"{error}\n")
        raise ServerFailed(_java_failure(error)) from error
    finally:
        gateway.shutdown()


def _serve(gateway, settings: Mapping[str, str], log_path: Path) -> int:
    """What HiveMetaStore.main and startMetaStore do, but on a loopback socket; the port served."""
    jvm = gateway.jvm
    # Java's own System.out: the log, as its stderr (the pipe is closed once this is done)
    log_stream = jvm.java.io.FileOutputStream(str(log_path), True)
    jvm.java.lang.System.setOut(jvm.java.io.PrintStream(log_stream, True))
    conf = _hive_conf(jvm, settings)
    _refuse_unsupported(jvm, conf)
    created = metastore_txn.ensure_tables(jvm, conf)  # before any request can ask for a lock
    if created:
        with open(log_path, "a") as log:
            log.write(f"created the transaction tables of the metastore's locks: {', '.join(created)}\n")
    server_class = jvm.java.lang.Class.forName(f"{HIVE}.metastore.HiveMetaStore")
    remote = server_class.getDeclaredField("isMetaStoreRemote")  # startMetaStore's first step
    remote.setAccessible(True)
    remote.setBoolean(None, True)
    hive = jvm.org.apache.hadoop.hive.metastore
    handler = hive.HiveMetaStore.newRetryingHMSHandler(
        hive.HiveMetaStore.HMSHandler("new db based metaserver", conf, False), conf
    )
    socket = jvm.org.apache.thrift.transport.TServerSocket(jvm.java.net.InetSocketAddress(LOCAL_HOST, 0))
    port = socket.getServerSocket().getLocalPort()
    if conf.getBoolVar(_var(jvm, "METASTORE_TCP_KEEP_ALIVE")):
        socket = hive.TServerSocketKeepAlive(socket)
    server = jvm.org.apache.thrift.server.TThreadPoolServer(_server_args(jvm, conf, handler, socket))
    server.setServerEventHandler(_new_hidden(gateway, server_class, "$3"))  # closes a client's RawStore
    serving = jvm.java.lang.Thread(
        jvm.java.beans.EventHandler.create(jvm.java.lang.Class.forName("java.lang.Runnable"), server, "serve"),
        "metastore thrift server",
    )
    serving.setDaemon(False)  # it keeps the JVM alive once the gateway has gone
    serving.start()
    metastore_txn.start_housekeeping(jvm, conf)
    return port


def _hive_conf(jvm, settings: Mapping[str, str]):
    """HiveMetaStore.main's configuration: the metastore's HiveConf, each --hiveconf pair both a
    system property (later HiveConfs read them) and set on it."""
    jvm.org.apache.hadoop.hive.conf.HiveConf.setLoadMetastoreConfig(True)
    conf = jvm.org.apache.hadoop.hive.conf.HiveConf(
        jvm.java.lang.Class.forName(f"{HIVE}.metastore.HiveMetaStore$HMSHandler")
    )
    for name, value in settings.items():
        jvm.java.lang.System.setProperty(name, value)
        conf.set(name, value)
    return conf


def _refuse_unsupported(jvm, conf) -> None:
    for name in ("METASTORE_USE_THRIFT_SASL", "HIVE_METASTORE_USE_SSL", "METASTORE_USE_THRIFT_FRAMED_TRANSPORT"):
        if conf.getBoolVar(_var(jvm, name)):
            raise ServerFailed(f"{_var(jvm, name)} is set: zipper's loopback server does not serve it")


def _server_args(jvm, conf, handler, socket):
    """TThreadPoolServer's arguments as startMetaStore makes them without SASL, SSL or framing."""
    thrift = jvm.org.apache.thrift
    hive = jvm.org.apache.hadoop.hive
    max_message = conf.getLongVar(_var(jvm, "METASTORESERVERMAXMESSAGESIZE"))
    if conf.getBoolVar(_var(jvm, "METASTORE_USE_THRIFT_COMPACT_PROTOCOL")):
        protocol = thrift.protocol.TCompactProtocol.Factory()
        input_protocol = thrift.protocol.TCompactProtocol.Factory(max_message, max_message)
    else:
        protocol = thrift.protocol.TBinaryProtocol.Factory()
        input_protocol = thrift.protocol.TBinaryProtocol.Factory(True, True, max_message, max_message)
    if conf.getBoolVar(_var(jvm, "METASTORE_EXECUTE_SET_UGI")):
        transport = hive.thrift.TUGIContainingTransport.Factory()
        processor = hive.metastore.TUGIBasedProcessor(handler)
    else:
        transport = thrift.transport.TTransportFactory()
        processor = hive.metastore.TSetIpAddressProcessor(handler)
    args = thrift.server.TThreadPoolServer.Args(socket)
    args.processor(processor).transportFactory(transport).protocolFactory(protocol)
    args.inputProtocolFactory(input_protocol)
    args.minWorkerThreads(conf.getIntVar(_var(jvm, "METASTORESERVERMINTHREADS")))
    args.maxWorkerThreads(conf.getIntVar(_var(jvm, "METASTORESERVERMAXTHREADS")))
    return args


def _var(jvm, name: str):
    return getattr(jvm.org.apache.hadoop.hive.conf.HiveConf.ConfVars, name)


def _new_hidden(gateway, outer, suffix: str):
    """An instance of one of `outer`'s anonymous classes (no-argument constructor, not public)."""
    jvm = gateway.jvm
    constructor = jvm.java.lang.Class.forName(outer.getName() + suffix).getDeclaredConstructors()[0]
    constructor.setAccessible(True)
    return constructor.newInstance(gateway.new_array(jvm.java.lang.Object, 0))


def _java_failure(error: Exception) -> str:
    """One line for a failure in the JVM: its innermost Java exception, else py4j's words."""
    java = getattr(error, "java_exception", None)
    if java is None:
        return f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
    cause = java
    while cause.getCause() is not None and cause.getCause() != cause:
        cause = cause.getCause()
    return str(cause.toString())


def _end(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
