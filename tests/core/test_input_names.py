"""The one rule the merge and the sensor share for an input's names: what readers skip, what a
write still under way leaves, and where a `file:` location is on the local disk."""

from __future__ import annotations

import pytest

from zipper.core import input_names
from zipper.core.paths import local_path, user_path


def test_a_folder_is_unfinished_while_it_holds_a_jobs_output_or_a_file_being_copied_in():
    names = [
        "part-0.parquet",
        "_SUCCESS",
        ".part-0.parquet.crc",
        "_temporary",
        ".spark-staging-3f2a",
        "part-9.parquet._COPYING_",
    ]
    assert input_names.unfinished_writes("hdfs://nn/in/ds=1/", lambda: names) == [
        "hdfs://nn/in/ds=1/.spark-staging-3f2a",
        "hdfs://nn/in/ds=1/_temporary",
        "hdfs://nn/in/ds=1/part-9.parquet._COPYING_",
    ]
    assert input_names.unfinished_writes("/in/ds=1", lambda: ["part-0.parquet", "_SUCCESS"]) == []


def test_a_matched_folder_that_is_itself_a_jobs_output_is_unfinished_without_listing_it():
    def not_listed():
        raise AssertionError("the folder's name says it all")

    assert input_names.unfinished_writes("file:/in/_temporary", not_listed) == ["file:/in/_temporary"]


@pytest.mark.parametrize(
    "name, hidden",
    [("_SUCCESS", True), (".crc", True), ("_metadata.json", True), ("part-0.parquet", False), ("ds=2024-01-01", False)],
)
def test_names_starting_with_an_underscore_or_a_dot_are_not_data(name, hidden):
    assert input_names.is_hidden(name) is hidden


@pytest.mark.parametrize(
    "uri, local",
    [
        ("file:/a/b", "/a/b"),
        ("file:///a b/c", "/a b/c"),
        ("/a", "/a"),
        ("hdfs://nn/a", None),
        ("s3a://bucket/a", None),
        ("rel/a", None),
    ],
)
def test_a_file_uri_is_its_local_path_and_remote_storage_has_none(uri, local):
    assert local_path(uri) == local
    assert user_path(uri) == (local or uri)
