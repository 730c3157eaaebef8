"""``kgraph.utils.get_file`` against a real HTTP server on 127.0.0.1: downloads, the cache, hashes, archives."""
import contextlib
import functools
import hashlib
import http.server
import inspect
import io
import os
import tarfile
import threading
import zipfile

import pytest

from kgraph.utils import get_file


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder; counts the requests; ``/truncated`` announces more bytes than it sends."""

    def do_GET(self):
        self.server.requests.append(self.path)
        if self.path == "/truncated":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"only a part")
            self.close_connection = True
            return
        super().do_GET()

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serving(folder):
    """An HTTP server for the files of ``folder`` on 127.0.0.1; yields it (``.url``, ``.requests``)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(folder)))
    server.requests = []
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def server(tmp_path):
    folder = tmp_path / "www"
    folder.mkdir()
    with serving(folder) as running:
        running.folder = folder
        yield running


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


def _leftovers(folder):
    return sorted(name for name in os.listdir(folder) if name.startswith("."))


def _tar_gz(members):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_downloads_into_keras_home_then_serves_the_cache(server, tmp_path, monkeypatch):
    (server.folder / "data.bin").write_bytes(b"payload")
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "home"))
    path = get_file(origin=f"{server.url}/data.bin")
    assert path == str(tmp_path / "home" / "datasets" / "data.bin")
    assert open(path, "rb").read() == b"payload" and server.requests == ["/data.bin"]
    assert get_file("data.bin", origin=f"{server.url}/data.bin", file_hash=_sha256(b"payload")) == path
    assert server.requests == ["/data.bin"]  # the cached file's hash matched: no second request
    get_file("data.bin", origin=f"{server.url}/data.bin", force_download=True)
    assert len(server.requests) == 2 and _leftovers(os.path.dirname(path)) == []


def test_cache_dir_and_subdir_and_a_stale_cached_file_is_downloaded_again(server, tmp_path):
    (server.folder / "w.json").write_bytes(b"{}")
    stale = tmp_path / "cache" / "models" / "w.json"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    path = get_file("w.json", origin=f"{server.url}/w.json", cache_dir=str(tmp_path / "cache"),
                    cache_subdir="models", file_hash=hashlib.md5(b"{}").hexdigest())
    assert path == str(stale) and stale.read_bytes() == b"{}" and server.requests == ["/w.json"]
    # md5_hash (deprecated) is an md5 check as well.
    assert get_file("w.json", origin=f"{server.url}/w.json", cache_dir=str(tmp_path / "cache"),
                    cache_subdir="models", md5_hash=hashlib.md5(b"{}").hexdigest()) == path
    assert server.requests == ["/w.json"]


def test_a_hash_mismatch_is_a_value_error_and_leaves_no_file(server, tmp_path):
    (server.folder / "f.bin").write_bytes(b"tampered")
    with pytest.raises(ValueError, match="file hash .* does not match the provided value of 0{64}"):
        get_file("f.bin", origin=f"{server.url}/f.bin", cache_dir=str(tmp_path), file_hash="0" * 64)
    assert os.listdir(tmp_path / "datasets") == []


@pytest.mark.parametrize("path, expected", [("/missing.bin", "404"), ("/truncated", "(1000 bytes|IncompleteRead)")])
def test_a_failed_download_leaves_no_partial_file(server, tmp_path, path, expected):
    with pytest.raises(OSError, match=f"URL fetch failure on {server.url}{path}.*{expected}"):
        get_file("f.bin", origin=f"{server.url}{path}", cache_dir=str(tmp_path))
    assert os.listdir(tmp_path / "datasets") == []


def test_bad_arguments_are_value_errors(tmp_path):
    with pytest.raises(ValueError, match='specify the "origin"'):
        get_file("f.bin", cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match="Paths are no longer accepted as the `fname` argument"):
        get_file("sub/f.bin", origin="http://127.0.0.1:9/f.bin", cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match="Can't parse the file name"):
        get_file(origin="http://127.0.0.1:9/", cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match="`hash_algorithm` must be one of"):
        get_file("f", origin="http://127.0.0.1:9/f", hash_algorithm="sha1", cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match="`archive_format` must be"):
        get_file("f", origin="http://127.0.0.1:9/f", extract=True, archive_format="rar", cache_dir=str(tmp_path))


def test_extract_tar_and_zip_with_keras_folder_names(server, tmp_path):
    (server.folder / "pack.tar.gz").write_bytes(_tar_gz({"pack/a.txt": b"A", "pack/sub/b.txt": b"B"}))
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("z/c.txt", "C")
    (server.folder / "z.zip").write_bytes(zipped.getvalue())
    cache = str(tmp_path)
    folder = get_file("pack.tar.gz", origin=f"{server.url}/pack.tar.gz", extract=True, cache_dir=cache)
    assert folder == str(tmp_path / "datasets" / "pack_extracted")
    assert (tmp_path / "datasets" / "pack.tar.gz").exists()
    assert open(os.path.join(folder, "pack", "sub", "b.txt"), "rb").read() == b"B"
    folder = get_file("pack", origin=f"{server.url}/pack.tar.gz", untar=True, cache_dir=cache)
    assert folder == str(tmp_path / "datasets" / "pack") and (tmp_path / "datasets" / "pack_archive").exists()
    assert open(os.path.join(folder, "pack", "a.txt"), "rb").read() == b"A"
    folder = get_file(origin=f"{server.url}/z.zip", extract=True, cache_dir=cache)
    assert folder == str(tmp_path / "datasets" / "z.zip") and (tmp_path / "datasets" / "z.zip_archive").exists()
    assert open(os.path.join(folder, "z", "c.txt")).read() == "C"
    assert _leftovers(tmp_path / "datasets") == []


def _escaping_tar(kind):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = tarfile.TarInfo({"dotdot": "../escaped.txt", "absolute": "/tmp/kgraph-escaped.txt"}.get(kind, "ok"))
        if kind == "symlink":
            info.type, info.linkname = tarfile.SYMTYPE, "../../outside"
            archive.addfile(info)
        else:
            info.size = 3
            archive.addfile(info, io.BytesIO(b"bad"))
    return buffer.getvalue()


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink", "zip"])
def test_an_archive_member_escaping_the_folder_refuses_the_archive(server, tmp_path, kind):
    if kind == "zip":
        zipped = io.BytesIO()
        with zipfile.ZipFile(zipped, "w") as archive:
            archive.writestr("../escaped.txt", "bad")
        data = zipped.getvalue()
    else:
        data = _escaping_tar(kind)
    (server.folder / "evil.tar").write_bytes(data)
    with pytest.raises(ValueError, match="Refusing to extract .* outside the extraction folder"):
        get_file("evil.tar", origin=f"{server.url}/evil.tar", extract=True, cache_dir=str(tmp_path / "c"))
    assert sorted(os.listdir(tmp_path / "c" / "datasets")) == ["evil.tar"]  # nothing extracted, no scratch left
    assert not (tmp_path / "c" / "escaped.txt").exists() and not (tmp_path / "escaped.txt").exists()


def test_extract_of_a_file_that_is_no_archive_is_a_value_error(server, tmp_path):
    (server.folder / "plain.txt").write_bytes(b"not an archive")
    with pytest.raises(ValueError, match="is not an archive of the formats"):
        get_file("plain.txt", origin=f"{server.url}/plain.txt", extract=True, cache_dir=str(tmp_path))


def test_the_signature_is_keras_3_15s():
    assert str(inspect.signature(get_file)) == (
        "(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None, cache_subdir='datasets', "
        "hash_algorithm='auto', extract=False, archive_format='auto', cache_dir=None, force_download=False)")
