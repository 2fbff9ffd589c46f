"""What a model file may not do to us: run code, hang a read, fill memory or the disk.

Every loader passes its input through these checks *before* any library
(Keras, h5py's model reader, TensorFlow's SavedModel loader) interprets it:

* :func:`check_path` — only regular files and directories: a FIFO would block
  the read forever, ``/dev/zero`` never ends. Files over ``max_bytes`` are refused.
* :func:`read_bounded` — read at most ``max_bytes`` (the file may grow, or be
  swapped for a FIFO, between the check and the read).
* :func:`check_zip` / :func:`extract_zip` — archives are judged by their
  directory: member count, total uncompressed size, compression ratio, and
  member paths (absolute, ``..``, symlinks) before one byte is inflated.
* :func:`code_in_keras_config` — a Keras config that would deserialize Python
  code (``Lambda`` bytecode, objects imported from non-Keras modules).
* :func:`unsafe_ops` — graph ops that touch the file system or the network, or
  call back into Python: a frozen graph with these would act when qviz runs it.
* :func:`h5_data_outside` — HDF5 datasets whose data lives in other files
  (external storage, external links, virtual datasets): reading the weights
  would read any file on the machine, or block forever on a FIFO.

All of these raise or report in the loaders' vocabulary: one line, naming the
input. The limits are documented defaults, overridable per call
(``qviz.load(..., max_bytes=...)``, ``qviz ... --max-model-mb``).

>>> code_in_keras_config({"class_name": "Dense", "config": {"name": "fc"}}) is None
True
>>> code_in_keras_config({"class_name": "Lambda", "config": {"name": "double"}})
"layer 'double' is a Lambda layer (arbitrary Python code)"
>>> sorted(unsafe_ops(["Conv2D", "WriteFile", "Relu", "PyFunc"]))
['PyFunc', 'WriteFile']
"""

from __future__ import annotations

import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .errors import LoadError

__all__ = ["Limits", "DEFAULT_LIMITS", "UNSAFE_OPS", "check_path", "check_model_path", "os_error", "read_bounded", "check_zip",
           "extract_zip", "code_in_keras_config", "unsafe_ops", "unsafe_ops_in_graph_def", "h5_data_outside"]


@dataclass(frozen=True)
class Limits:
    """How much one model may cost to open.

    Attributes:
        max_bytes: the largest file (or, for an archive, total uncompressed
            size) a loader reads. 2 GiB is also protobuf's hard limit for one
            GraphDef message.
        max_members: the most members an archive may hold.
        max_ratio: the highest compression ratio (uncompressed / compressed) a
            member over 1 MiB may have; real weights compress 1–5×, JSON ~10×.
        max_config_bytes: the largest Keras ``config.json`` / ``model_config``.
        max_nesting: the deepest nesting of a Keras config.
    """

    max_bytes: int = 2 * 2**30
    max_members: int = 10_000
    max_ratio: float = 200.0
    max_config_bytes: int = 64 * 2**20
    max_nesting: int = 200


DEFAULT_LIMITS = Limits()


def _size(n: int) -> str:
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def os_error(label: str, exc: OSError) -> LoadError:
    """The one-line :class:`LoadError` for an OS error met reading ``label``."""
    for kind, cause in ((FileNotFoundError, "no such file or directory"), (PermissionError, "permission denied"),
                        (IsADirectoryError, "is a directory")):
        if isinstance(exc, kind):
            return LoadError(label, cause)
    return LoadError(label, f"cannot be read: {exc.strerror or type(exc).__name__}")


def check_path(path: Path, label: str, limits: Limits = DEFAULT_LIMITS) -> os.stat_result:
    """Stat ``path`` (following links): a regular file within ``max_bytes``, or a directory.

    >>> check_path(Path("/dev/null"), "null.pb")
    Traceback (most recent call last):
    ...
    qviz.importers.errors.LoadError: null.pb: not a regular file (a character device); qviz reads model files and SavedModel directories only
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise os_error(label, exc) from None
    if stat.S_ISDIR(st.st_mode):
        return st
    if not stat.S_ISREG(st.st_mode):
        raise LoadError(label, f"not a regular file ({_kind(st.st_mode)}); qviz reads model files and "
                               "SavedModel directories only")
    if st.st_size > limits.max_bytes:
        raise LoadError(label, f"is {_size(st.st_size)}, over the {_size(limits.max_bytes)} model size limit "
                               "(raise it with max_bytes= or --max-model-mb)")
    return st


def check_model_path(path: Path, label: str, limits: Limits = DEFAULT_LIMITS) -> os.stat_result:
    """:func:`check_path` for a model given to open, which is not empty either (said before
    TensorFlow is imported: an empty file took 4.7 s to refuse)."""
    st = check_path(path, label, limits)
    if stat.S_ISREG(st.st_mode) and st.st_size == 0:
        raise LoadError(label, "the file is empty")
    return st


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def read_bounded(path: Path, label: str, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """The bytes of a regular file, never more than ``limits.max_bytes``.

    Opened non-blocking and checked again on the open descriptor, so a file
    swapped for a FIFO after :func:`check_path` cannot hang the read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise os_error(label, exc) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LoadError(label, f"not a regular file ({_kind(st.st_mode)})")
        # the size the file says, in one read (no copies: chunks and their join took a 100 MB
        # file 0.2 s here, one read 0.1 s); then on in chunks, should it have grown since
        chunks, total, said = [], 0, min(st.st_size, limits.max_bytes) + 1
        while True:
            chunk = os.read(fd, min(max(said - total, 1 << 22), limits.max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limits.max_bytes:
                raise LoadError(label, f"is over the {_size(limits.max_bytes)} model size limit "
                                       "(raise it with max_bytes= or --max-model-mb)")
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


def _member_problem(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":") or ".." in parts:
        return f"unsafe path in the archive: {name!r}"
    if stat.S_ISLNK(info.external_attr >> 16):
        return f"the archive holds a symbolic link: {name!r}"
    if info.flag_bits & 0x1:
        return f"member {name!r} is encrypted"
    return None


def check_zip(path: Path, label: str, limits: Limits = DEFAULT_LIMITS) -> list[zipfile.ZipInfo]:
    """The members of a zip archive, refused by its directory alone if it is too
    many, too large, too compressed, or has paths that leave the archive.

    Python's ``zipfile`` never inflates more than a member's declared size, so
    bounding the declared sizes bounds what any later reader can be made to do.
    """
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, NotImplementedError):
        raise LoadError(label, "not a valid zip archive (truncated or corrupt?)") from None
    if len(infos) > limits.max_members:
        raise LoadError(label, f"the archive has {len(infos)} members, over the limit of {limits.max_members}")
    total = 0
    for info in infos:
        problem = _member_problem(info)
        if problem:
            raise LoadError(label, problem)
        total += info.file_size
        if total > limits.max_bytes:
            raise LoadError(label, f"the archive unpacks to over {_size(limits.max_bytes)}, the model size limit "
                                   "(raise it with max_bytes= or --max-model-mb)")
        if info.file_size > 2**20 and info.file_size > limits.max_ratio * max(info.compress_size, 1):
            ratio = info.file_size / max(info.compress_size, 1)
            raise LoadError(label, f"member {info.filename!r} is compressed {ratio:.0f}:1 "
                                   f"(over {limits.max_ratio:.0f}:1; a zip bomb?)")
    return infos


def extract_zip(path: Path, dest: Path, label: str, limits: Limits = DEFAULT_LIMITS) -> None:
    """Unpack a zip archive checked by :func:`check_zip` into ``dest``, counting
    every byte written (declared sizes are not trusted)."""
    infos = check_zip(path, label, limits)
    root = dest.resolve()
    written = 0
    try:
        with zipfile.ZipFile(path) as zf:
            for info in infos:
                target = (root / info.filename).resolve()
                if root not in target.parents and target != root:
                    raise LoadError(label, f"unsafe path in the archive: {info.filename!r}")
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as out:
                    while chunk := src.read(1 << 20):
                        written += len(chunk)
                        if written > limits.max_bytes:
                            raise LoadError(label, f"the archive unpacks to over {_size(limits.max_bytes)}")
                        out.write(chunk)
    except LoadError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, NotImplementedError, RuntimeError) as exc:
        raise LoadError(label, f"the archive could not be unpacked: {type(exc).__name__}") from None


#: Modules a Keras config may import objects from in safe mode: Keras' own and
#: qviz's QAT layers. Anything else is code chosen by the file's author.
KERAS_MODULES = ("keras", "tf_keras", "qviz")


def code_in_keras_config(config, limits: Limits = DEFAULT_LIMITS) -> str | None:
    """Why deserializing this Keras config (``config.json`` of a ``.keras``, the
    ``model_config`` of an ``.h5``) would run code from the file; ``None`` if it
    would not. Walks the config without recursion, so no nesting can crash it.
    """
    stack = [(config, 0, "")]
    while stack:
        obj, depth, layer = stack.pop()
        if depth > limits.max_nesting:
            return f"the model config is nested over {limits.max_nesting} levels deep"
        if isinstance(obj, list):
            stack.extend((v, depth + 1, layer) for v in obj)
            continue
        if not isinstance(obj, dict):
            continue
        cfg = obj.get("config")
        name = cfg.get("name") if isinstance(cfg, dict) and isinstance(cfg.get("name"), str) else None
        here = name or layer
        cls = obj.get("class_name")
        if cls == "Lambda":
            return f"layer {here!r} is a Lambda layer (arbitrary Python code)"
        if cls == "__lambda__":
            return f"layer {here!r} holds a Python lambda (arbitrary Python code)"
        if obj.get("function_type") == "lambda" or obj.get("output_shape_type") == "lambda":
            return f"layer {here!r} holds a Python function (arbitrary Python code)"
        module = obj.get("module")
        if isinstance(cls, str) and isinstance(module, str) and module and \
                module.split(".")[0] not in KERAS_MODULES:
            return f"layer {here!r} uses {cls!r} from module {module!r} (code outside Keras)"
        stack.extend((v, depth + 1, here) for v in obj.values())
    return None


def h5_data_outside(h5file) -> str | None:
    """Why reading an open ``h5py.File`` would read other files, or ``None``.

    HDF5 lets a dataset keep its data in another file (external storage), be a
    link into another file, or be a view of datasets in other files (virtual
    datasets). Keras' legacy ``.h5`` readers follow all three: a weight could
    be ``/etc/shadow``, or a FIFO that blocks the load forever. Only the file's
    metadata is read here.
    """
    import h5py

    found: list[str] = []

    def on_link(name, link):
        if isinstance(link, h5py.ExternalLink):
            found.append(f"{name!r} is stored outside the file (an HDF5 external link to {link.filename!r})")
            return True
        return None

    def on_object(name, obj):
        if isinstance(obj, h5py.Dataset):
            if obj.external:
                files = sorted({str(entry[0]) for entry in obj.external})
                found.append(f"dataset {name!r} is stored outside the file (HDF5 external storage in "
                             f"{', '.join(map(repr, files))})")
                return True
            if obj.is_virtual:
                found.append(f"dataset {name!r} is stored outside the file (an HDF5 virtual dataset)")
                return True
        return None

    h5file.visititems_links(on_link)
    if not found:
        h5file.visititems(on_object)
    return found[0] if found else None


#: Ops that read or write files, open connections, or call into Python. A
#: frozen inference graph needs none of them; a hostile one uses them to act
#: when qviz runs it (calibration, verification) or when TensorFlow loads it.
UNSAFE_OPS = frozenset({
    # files
    "WriteFile", "ReadFile", "MatchingFiles", "ImmutableConst", "FileSystemSetConfiguration",
    "Save", "SaveSlices", "SaveV2", "Restore", "RestoreSlice", "RestoreV2", "MergeV2Checkpoints",
    "LoadAndRemapMatrix", "GenerateVocabRemapping", "Skipgram", "DecodeProtoV2", "EncodeProto",
    "InitializeTableFromTextFile", "InitializeTableFromTextFileV2",
    "TextLineReader", "TextLineReaderV2", "WholeFileReader", "WholeFileReaderV2", "TFRecordReader",
    "TFRecordReaderV2", "FixedLengthRecordReader", "FixedLengthRecordReaderV2", "LMDBReader", "IdentityReader",
    "IdentityReaderV2",
    "TFRecordDataset", "TFRecordDatasetV2", "TextLineDataset", "FixedLengthRecordDataset",
    "FixedLengthRecordDatasetV2", "SaveDataset", "SaveDatasetV2", "LoadDataset", "SnapshotDataset",
    "SnapshotDatasetV2", "CacheDataset", "CacheDatasetV2", "DatasetToTFRecord", "ExperimentalDatasetToTFRecord",
    "SqlDataset", "ExperimentalSqlDataset", "LMDBDataset", "ExperimentalLMDBDataset", "CSVDataset",
    "CSVDatasetV2", "ExperimentalCSVDataset", "MatchingFilesDataset", "ExperimentalMatchingFilesDataset",
    "DistributedSave", "ListSnapshotChunksDataset", "SnapshotChunkDataset", "SnapshotDatasetReader",
    "SnapshotNestedDatasetReader", "RecordInput", "DTensorRestoreV2", "DumpTensor", "CalibrationStatisticsSaver",
    # summaries and debugging (write to files or URLs)
    "WriteSummary", "WriteScalarSummary", "WriteHistogramSummary", "WriteImageSummary", "WriteAudioSummary",
    "WriteRawProtoSummary", "WriteGraphSummary", "ImportEvent", "CreateSummaryFileWriter",
    "CreateSummaryDbWriter", "FlushSummaryWriter", "CloseSummaryWriter", "SummaryWriter",
    "PrintV2", "DebugIdentity", "DebugIdentityV2", "DebugIdentityV3", "DebugNanCount", "DebugNumericSummary",
    "DebugNumericSummaryV2",
    # Python callbacks
    "PyFunc", "PyFuncStateless", "EagerPyFunc",
    # other processes and machines
    "Send", "Recv", "_Send", "_Recv", "_HostSend", "_HostRecv", "Rpc", "TryRpc", "RpcClient", "RpcCall",
    "RpcCheckStatus", "RpcServer", "RpcServerStart", "RpcServerRegister",
    "CollectiveReduce", "CollectiveReduceV2", "CollectiveReduceV3", "CollectiveGather", "CollectiveGatherV2",
    "CollectiveBcastSend", "CollectiveBcastRecv", "CollectiveBcastSendV2", "CollectiveBcastRecvV2",
    "CollectiveAllToAllV2", "CollectiveAllToAllV3", "DataServiceDataset", "DataServiceDatasetV2",
    "DataServiceDatasetV3", "DataServiceDatasetV4", "RegisterDataset", "RegisterDatasetV2",
})

#: What a SavedModel's own save/restore machinery uses; TensorFlow drives these
#: with paths inside the SavedModel directory.
CHECKPOINT_OPS = frozenset({"SaveV2", "RestoreV2", "MergeV2Checkpoints"})


def unsafe_ops(op_types, allowed: frozenset = frozenset()) -> set[str]:
    """The op types in ``op_types`` that are in :data:`UNSAFE_OPS` (less ``allowed``)."""
    return (set(op_types) & UNSAFE_OPS) - allowed


def unsafe_ops_in_graph_def(graph_def, allowed: frozenset = frozenset()) -> list[tuple[str, str]]:
    """``(op type, node)`` of every unsafe op in a GraphDef, its function library included."""
    found = [(nd.op, nd.name) for nd in graph_def.node if nd.op in UNSAFE_OPS and nd.op not in allowed]
    for fn in graph_def.library.function:
        found += [(nd.op, f"{fn.signature.name}/{nd.name}") for nd in fn.node_def
                  if nd.op in UNSAFE_OPS and nd.op not in allowed]
    return found


def refuse_unsafe_ops(found: list[tuple[str, str]], label: str) -> None:
    """Raise the safe-mode error for ops found by :func:`unsafe_ops_in_graph_def`."""
    if found:
        op, node = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise LoadError(label, f"op {node!r} is a {op}{more}, which touches files, the network or Python; "
                               "refused in safe mode — if you trust this file, load it with safe_mode=False "
                               "(--unsafe on the command line)")
