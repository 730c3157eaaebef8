"""``keras.utils.get_file``: a file downloaded once into the Keras cache, its hash checked, archives extracted safely.

Downloads go to a temporary file beside the target and are renamed into place only once complete and, where a
hash is given, verified, so an interrupted or corrupted download never leaves a file the next call would trust.
Archives are checked member by member before anything is written: a member that would land outside the
extraction folder (an absolute path, ``..``, a link pointing out) refuses the whole archive.
"""
import hashlib
import os
import shutil
import tempfile
import urllib.parse

_HASH_ALGORITHMS = ("auto", "sha256", "md5")
_ARCHIVE_FORMATS = ("tar", "zip")
_CHUNK = 1 << 16
_TIMEOUT_S = 60.0


def keras_home():
    """The Keras cache folder: ``$KERAS_HOME`` when set, else ``~/.keras``."""
    if "KERAS_HOME" in os.environ:
        return os.environ["KERAS_HOME"]
    home = os.path.expanduser("~")
    return os.path.join(home if os.access(home, os.W_OK) else tempfile.gettempdir(), ".keras")


def resolve_hasher(algorithm, file_hash=None):
    """A hashlib object for ``algorithm``; ``"auto"`` is sha256 for a 64-character hash, else md5."""
    if algorithm not in _HASH_ALGORITHMS:
        raise ValueError(f"`hash_algorithm` must be one of {list(_HASH_ALGORITHMS)}. Received: "
                         f"hash_algorithm={algorithm!r}")
    if algorithm == "sha256" or (algorithm == "auto" and file_hash is not None and len(file_hash) == 64):
        return hashlib.sha256()
    return hashlib.md5()


def hash_file(fpath, algorithm="sha256", chunk_size=_CHUNK):
    """The hex digest of the file at ``fpath`` (``algorithm``: ``"sha256"``, ``"md5"`` or a hashlib object)."""
    hasher = resolve_hasher(algorithm) if isinstance(algorithm, str) else algorithm
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            hasher.update(chunk)
    return hasher.hexdigest()


def validate_file(fpath, file_hash, algorithm="auto", chunk_size=_CHUNK):
    """Whether the file at ``fpath`` has the sha256 or md5 hash ``file_hash``."""
    actual = hash_file(fpath, resolve_hasher(algorithm, file_hash), chunk_size)
    return actual == str(file_hash).lower()


def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None, cache_subdir="datasets",
             hash_algorithm="auto", extract=False, archive_format="auto", cache_dir=None, force_download=False):
    """Download ``origin`` into the Keras cache (``~/.keras/datasets`` by default) unless it is already there.

    Returns the path of the file, or of the folder an archive was extracted into when ``extract`` (or the
    deprecated ``untar``) is set. A cached file is downloaded again when ``force_download`` is set or its hash
    differs from ``file_hash``; a downloaded file whose hash differs is removed and a ValueError raised. An
    archive is extracted when it was downloaded or its folder is missing. ``archive_format`` is ``"auto"``
    (tar, then zip), ``"tar"``, ``"zip"``, a list of them, or None.
    """
    if origin is None:
        raise ValueError('Please specify the "origin" argument (URL of the file to download).')
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    resolve_hasher(hash_algorithm)
    if file_hash is not None and not isinstance(file_hash, str):
        raise ValueError(f"`file_hash` must be a hex string. Received: file_hash={file_hash!r}")
    if extract or untar:
        formats = _archive_formats("tar" if untar else archive_format)
    datadir = _cache_folder(cache_dir, cache_subdir)
    name = _file_name(fname, origin)
    if extract or untar:
        download_target, extraction_dir = _archive_targets(datadir, name, provided=bool(fname))
    else:
        download_target = os.path.join(datadir, name)
    download = force_download or not os.path.exists(download_target)
    if not download and file_hash is not None and not validate_file(download_target, file_hash, hash_algorithm):
        algorithm = resolve_hasher(hash_algorithm, file_hash).name
        print(f"A local file was found, but it seems to be incomplete or outdated because the {algorithm} file "
              f"hash does not match the original value of {file_hash} so we will re-download the data.")
        download = True
    if download:
        _download(origin, download_target, file_hash, hash_algorithm)
    if not (extract or untar):
        return download_target
    if download or not os.path.isdir(extraction_dir):
        extract_archive(download_target, extraction_dir, formats)
    return extraction_dir


def _cache_folder(cache_dir, cache_subdir):
    base = os.path.expanduser(os.fspath(cache_dir if cache_dir is not None else keras_home()))
    try:
        os.makedirs(base, exist_ok=True)
    except OSError:
        pass
    if not os.access(base, os.W_OK):
        base = os.path.join(tempfile.gettempdir(), ".keras")
    datadir = os.path.join(base, os.fspath(cache_subdir))
    os.makedirs(datadir, exist_ok=True)
    return datadir


def _file_name(fname, origin):
    name = os.fspath(fname) if fname is not None else ""
    if not name:
        name = os.path.basename(urllib.parse.urlsplit(origin).path)
        if not name:
            raise ValueError(f"Can't parse the file name from the origin provided: '{origin}'. Please specify "
                             "the `fname` argument.")
    elif any(sep and sep in name for sep in (os.sep, os.altsep, "/")):
        raise ValueError("Paths are no longer accepted as the `fname` argument. To specify the file's parent "
                         f"directory, use the `cache_dir` argument. Received: fname={name}")
    if name in (".", ".."):
        raise ValueError(f"`fname` must name a file. Received: fname={name!r}")
    return name


def _archive_targets(datadir, name, provided):
    """Keras's names: ``data.tar.gz`` -> (``data.tar.gz``, ``data_extracted/``); ``data`` -> (``data_archive``,
    ``data/``); without ``fname``, the name from the URL is the folder and ``<name>_archive`` the download."""
    if provided and "." in name:
        return os.path.join(datadir, name), os.path.join(datadir, f"{name[:name.find('.')]}_extracted")
    return os.path.join(datadir, f"{name}_archive"), os.path.join(datadir, name)


def _download(origin, target, file_hash, hash_algorithm):
    """Fetch ``origin`` into a temporary file beside ``target``, verify it, then rename it into place."""
    print(f"Downloading data from {origin}")
    # A fresh name opened exclusively (not mkstemp): the file keeps the permissions the umask gives.
    partial = _scratch_name(target, ".part")
    try:
        with open(partial, "xb") as out:
            _fetch(origin, out)
        if file_hash is not None and not validate_file(partial, file_hash, hash_algorithm):
            hasher = resolve_hasher(hash_algorithm, file_hash)
            actual = hash_file(partial, hasher)
            raise ValueError(f"Incomplete or corrupted file detected. The {hasher.name} file hash of the file "
                             f"downloaded from {origin} is {actual}, which does not match the provided value of "
                             f"{file_hash}; the file was removed.")
        os.replace(partial, target)
    except BaseException:
        if os.path.exists(partial):
            os.remove(partial)
        raise


def _scratch_name(path, suffix):
    """A hidden name beside ``path`` that no other call uses."""
    return os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.urandom(8).hex()}{suffix}")


def _fetch(origin, out):
    import http.client
    import urllib.error
    import urllib.request

    from kgraph.utils.progbar import Progbar
    try:
        with urllib.request.urlopen(origin, timeout=_TIMEOUT_S) as response:
            total = response.headers.get("Content-Length")
            total = int(total) if total and total.isdigit() else None
            progbar, received = Progbar(total), 0
            for chunk in iter(lambda: response.read(_CHUNK), b""):
                out.write(chunk)
                received += len(chunk)
                progbar.update(received)
            progbar.update(received, finalize=True)
    except urllib.error.HTTPError as err:
        raise OSError(f"URL fetch failure on {origin}: {err.code} -- {err.reason}") from None
    except urllib.error.URLError as err:
        raise OSError(f"URL fetch failure on {origin}: {err.errno} -- {err.reason}") from None
    except (http.client.HTTPException, OSError) as err:
        raise OSError(f"URL fetch failure on {origin}: {type(err).__name__}: {err}") from None
    if total is not None and received != total:
        raise OSError(f"URL fetch failure on {origin}: received {received} of the {total} bytes announced.")


def _archive_formats(archive_format):
    if archive_format is None:
        return []
    formats = list(_ARCHIVE_FORMATS) if archive_format == "auto" else \
        [archive_format] if isinstance(archive_format, str) else list(archive_format)
    unknown = [f for f in formats if f not in _ARCHIVE_FORMATS]
    if unknown:
        raise ValueError(f"`archive_format` must be 'auto', 'tar', 'zip', a list of them, or None. Received: "
                         f"archive_format={archive_format!r}")
    return formats


def extract_archive(file_path, path=".", archive_format="auto"):
    """Extract the tar (``.tar``, ``.tar.gz``, ``.tar.bz2``, ...) or zip archive ``file_path`` into ``path``.

    Every member is checked before anything is written: one that would land outside ``path`` refuses the whole
    archive with a ValueError. The archive is extracted into a temporary folder, then moved into ``path``.
    """
    import tarfile
    import zipfile
    file_path, path = os.fspath(file_path), os.fspath(path)
    formats = _archive_formats(archive_format)
    opener = next((kind for kind in formats
                   if (tarfile.is_tarfile if kind == "tar" else zipfile.is_zipfile)(file_path)), None)
    if opener is None:
        raise ValueError(f"Cannot extract '{file_path}': it is not an archive of the formats {formats} "
                         "(archive_format).")
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    scratch = _scratch_name(os.path.join(parent, os.path.basename(path)), ".extracting")
    os.mkdir(scratch)
    try:
        try:
            _extract_into(file_path, opener, scratch)
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as err:
            raise ValueError(f"Cannot extract '{file_path}': the archive is corrupt "
                             f"({type(err).__name__}: {err}).") from None
        _move_contents(scratch, path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return True


def _extract_into(file_path, kind, folder):
    import tarfile
    import zipfile
    if kind == "zip":
        with zipfile.ZipFile(file_path) as archive:
            for info in archive.infolist():
                _check_member(file_path, folder, info.filename)
            archive.extractall(folder)
        return
    with tarfile.open(file_path) as archive:
        members = archive.getmembers()
        has_filter = hasattr(tarfile, "data_filter")
        for member in members:
            _check_tar_member(file_path, folder, member, links_allowed=has_filter)
        if not has_filter:
            archive.extractall(folder, members=members)
            return
        # The "data" filter checks again as it writes, against links the archive itself creates.
        try:
            archive.extractall(folder, members=members, filter="data")
        except tarfile.FilterError as err:
            raise ValueError(f"Refusing to extract '{file_path}': {err}.") from None


def _inside(folder, relative):
    target = os.path.normpath(os.path.join(folder, relative))
    return not os.path.isabs(relative) and os.path.commonpath([target, folder]) == folder


def _check_member(archive_path, folder, name):
    if not _inside(folder, name):
        raise ValueError(f"Refusing to extract '{archive_path}': its member {name!r} would be written outside "
                         "the extraction folder.")


def _check_tar_member(archive_path, folder, member, links_allowed):
    _check_member(archive_path, folder, member.name)
    if member.issym() or member.islnk():
        # A symbolic link resolves from its own folder, a hard link from the archive's root.
        base = os.path.dirname(os.path.join(folder, member.name)) if member.issym() else folder
        target = os.path.relpath(os.path.normpath(os.path.join(base, member.linkname)), folder)
        if not links_allowed or os.path.isabs(member.linkname) or not _inside(folder, target):
            raise ValueError(f"Refusing to extract '{archive_path}': its member {member.name!r} links to "
                             f"{member.linkname!r}, outside the extraction folder.")
    elif not (member.isfile() or member.isdir()):
        raise ValueError(f"Refusing to extract '{archive_path}': its member {member.name!r} is a device or pipe.")


def _move_contents(scratch, path):
    """Move what was extracted into ``path``, replacing entries of the same names (a re-extraction)."""
    if not os.path.exists(path):
        os.replace(scratch, path)
        return
    if not os.path.isdir(path):
        raise ValueError(f"Cannot extract into '{path}': it exists and is not a folder.")
    for name in os.listdir(scratch):
        destination = os.path.join(path, name)
        if os.path.isdir(destination) and not os.path.islink(destination):
            shutil.rmtree(destination)
        elif os.path.lexists(destination):
            os.remove(destination)
        os.replace(os.path.join(scratch, name), destination)
