"""What a file holds: its text, the first bytes of a compressed file, a copy of it elsewhere.

These read and write bytes, where `fs` only lists and names files. Reading a head needs
Hadoop's codecs by file-name extension, which nothing else needs. Paths are spelled as in `fs`."""

from __future__ import annotations

import bz2
import gzip
import posixpath
import zlib

from zipper.core.filesystems import exists, locate, name_of


def read_text(path: str) -> str:
    filesystem, inner, _ = locate(path)
    with filesystem.open_input_stream(inner) as stream:
        return stream.read().decode("utf-8", errors="replace")


# Hadoop's codecs by the file-name extension they claim, as Python decompresses them: `.deflate`
# is a zlib stream; `.zst` zstd frames. Hadoop's `.lz4` and `.snappy` are its own block formats,
# which no Python library here reads: such a file's head is refused (an OSError), not misread.
_DECOMPRESSORS = {
    ".gz": lambda stream: gzip.GzipFile(fileobj=stream, mode="rb"),
    ".bz2": lambda stream: bz2.BZ2File(stream, mode="rb"),
    ".deflate": lambda stream: _ZlibReader(stream),
}
_PYARROW_CODECS = {".zst": "zstd"}
_UNREADABLE_CODECS = (".lz4", ".snappy")


class _ZlibReader:
    """A zlib stream decompressed as it is read."""

    def __init__(self, stream):
        self._stream, self._inflate = stream, zlib.decompressobj()

    def read(self, size: int) -> bytes:
        out = b""
        while len(out) < size and not self._inflate.eof:
            chunk = self._stream.read(64 << 10)
            if not chunk:
                break
            out += self._inflate.decompress(chunk, size - len(out))
            while self._inflate.unconsumed_tail and len(out) < size:
                out += self._inflate.decompress(self._inflate.unconsumed_tail, size - len(out))
        return out

    def close(self) -> None:
        self._stream.close()


class FileHeads:
    """The first bytes of files, decompressed as their names say (`.gz`, `.bz2`, `.deflate`,
    `.zst`) as Spark's readers do: a CSV header without reading the file."""

    def read(self, path: str, size: int) -> bytes:
        """At most `size` bytes from the start of the file's content, fewer only at its end."""
        filesystem, inner, _ = locate(path)
        extension = _extension(path)
        if extension in _UNREADABLE_CODECS:
            raise OSError(f"cannot decompress {name_of(path)}: Hadoop's {extension} codec has no reader here")
        stream = filesystem.open_input_stream(inner, compression=_PYARROW_CODECS.get(extension))
        if extension in _DECOMPRESSORS:
            stream = _DECOMPRESSORS[extension](stream)
        try:
            return _read_up_to(stream, size)
        finally:
            stream.close()


def _extension(path: str) -> str:
    """The codec extension a file's name ends with (Hadoop matches the name's end), or ''."""
    name = name_of(path)
    return next((e for e in (*_DECOMPRESSORS, *_PYARROW_CODECS, *_UNREADABLE_CODECS) if name.endswith(e)), "")


def _read_up_to(stream, size: int) -> bytes:
    """`size` bytes, fewer only at the end: a decompressing stream may give fewer a read."""
    chunks, got = [], 0
    while got < size:
        chunk = stream.read(size - got)
        if not chunk:
            break
        chunks.append(bytes(chunk))
        got += len(chunk)
    return b"".join(chunks)


def copy(source: str, target: str) -> None:
    """Copy one file (across file systems if need be); the target must not exist."""
    if exists(target):
        raise OSError(f"could not copy {source} to {target}: {target} already exists")
    src_fs, src, _ = locate(source)
    dst_fs, dst, _ = locate(target)
    dst_fs.create_dir(posixpath.dirname(dst), recursive=True)
    with src_fs.open_input_stream(src) as reader, dst_fs.open_output_stream(dst) as writer:
        while chunk := reader.read(8 << 20):
            writer.write(chunk)
