"""The thrift connection's own checks, against a plain socket server: no metastore, no JVM."""

from __future__ import annotations

import socket

import pytest

from zipper.core.errors import StateError
from zipper.core.hms import MetastoreClient


@pytest.fixture
def listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    yield server
    server.close()


def test_a_connection_is_open_while_idle_and_not_once_the_server_closed_it(listener):
    port = listener.getsockname()[1]
    with MetastoreClient(f"thrift://127.0.0.1:{port}") as client:
        accepted, _ = listener.accept()
        assert client.is_open()
        accepted.sendall(b"x")  # bytes no call asked for: out of step
        assert not client.is_open()
        accepted.close()
        assert not client.is_open()
    assert not client.is_open()  # closed on exit


def test_a_metastore_that_does_not_answer_is_one_line(listener):
    port = listener.getsockname()[1]
    listener.close()
    with pytest.raises(StateError, match=f"the metastore at thrift://127.0.0.1:{port} did not answer"):
        MetastoreClient(f"thrift://127.0.0.1:{port}").__enter__()
