"""Which folders Spark's partition discovery takes as partitions, as `reader` tells without a JVM."""

from __future__ import annotations

from zipper.inputs.reader import _partition_folders


def test_partition_folders_are_the_name_value_folders_below_the_root():
    listed = {"/in/ds=1/f", "/in/ds=1/part=a/g", "/in/ds=1/sub/h"}
    assert _partition_folders(listed, ["/in/ds=1"], {}) == {"/in/ds=1/part=a"}  # the root itself is no partition
    assert _partition_folders(listed, ["file:/in/ds=1/"], {}) == {"/in/ds=1/part=a"}
    assert _partition_folders(listed, ["/in/ds=1"], {"recursiveFileLookup": "true"}) is None
    assert _partition_folders(listed, ["/in/ds=1"], {"basePath": "/in"}) == {"/in/ds=1", "/in/ds=1/part=a"}
    assert _partition_folders({"/in/f", "/in/sub/g"}, ["/in"], {}) is None
