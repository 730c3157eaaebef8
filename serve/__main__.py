"""Command line: kgraph-serve (or python -m serve) PATH [options].

The web stack and onnxruntime load only once the arguments are parsed, so ``--help`` and ``--version`` answer at
once.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from serve import __version__
from serve.defaults import CUDA_DEFAULTS, MODES, default_threads

if TYPE_CHECKING:
    from serve.control import Restriction

logger = logging.getLogger("serve")


def _count(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def _device(text: str) -> str:
    from serve.runtime import RuntimeSetupError, parse_device

    try:
        parse_device(text)
    except RuntimeSetupError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _restriction(text: str) -> Restriction:
    from serve.control import Restriction

    try:
        return Restriction.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _prog() -> str:
    """The program name of the help and errors: the console script's own, else ``python -m serve``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    name = name[:-4] if name.lower().endswith(".exe") else name
    return name if name.startswith("kgraph-") else "python -m serve"


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    parser = argparse.ArgumentParser(
        prog=_prog(),
        description=(
            "Serve ONNX models with onnxruntime over the Open Inference Protocol "
            "(KServe V2 / Triton, REST and gRPC), with dynamic batching."
        ),
        epilog=(
            "Dynamic batching merges concurrent requests for a model along axis 0 into one run. "
            "Turn it off with --no-batching (or --max-batch-size 0). "
            "A model's config.pbtxt (Triton's model configuration, read strictly: an unknown or unsupported "
            "field makes that model UNAVAILABLE) overrides the flags for that model: max_batch_size (0: never "
            "batch), dynamic_batching { max_queue_delay_microseconds, preferred_batch_size, default_queue_policy "
            "{ max_queue_size } }, instance_group, version_policy (default: the latest version only), "
            "input/output dims (enforced on every request). "
            "Exit status: 0 after a clean stop on SIGTERM or SIGINT; 1 when no model could be loaded at startup; "
            "2 for a command-line or setup error; 3 when a port (HTTP, gRPC or metrics) cannot be bound."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "path",
        metavar="PATH",
        type=Path,
        help="an .onnx file (served as model <file stem>, version 1) or a model repository directory "
        "laid out as DIR/NAME/config.pbtxt (optional) and DIR/NAME/<version>/model.onnx",
    )
    _add_network(parser.add_argument_group("network"))
    _add_devices(parser.add_argument_group("devices and threads"))
    _add_batching(parser.add_argument_group("dynamic batching"))
    _add_repository(parser.add_argument_group("model repository"))
    _add_limits(parser.add_argument_group("limits (admission control; 0 turns a limit off)"))
    return parser


def _add_limits(group) -> None:
    """What one request, one model, one connection and all of them together may cost."""
    limits = [
        ("--max-json-bytes", 16 << 20, "largest JSON request body (a binary request's JSON header too); "
         "JSON costs many times its size to parse, so its limit is below --max-request-bytes"),
        ("--max-request-elements", 1 << 24, "most input elements one request may hold, summed over its inputs "
         "(413 beyond)"),
        ("--max-model-elements", 1 << 26, "most input elements the requests held by one model version may "
         "hold together, queued or running (503 beyond)"),
        ("--max-queue-size", 0, "most requests one model version keeps waiting for a run beyond the --threads "
         "that run at once (Triton's max_queue_size; 503 beyond)"),
        ("--max-inflight-requests", 1024, "most inference requests in flight over REST and gRPC together "
         "(503, gRPC RESOURCE_EXHAUSTED beyond)"),
        ("--max-inflight-bytes", 1 << 30, "most request bytes in flight, a JSON body counting 16 times its size "
         "(503, gRPC RESOURCE_EXHAUSTED beyond)"),
        ("--max-inference-memory", None, "bytes onnxruntime's CPU arena may hold for every model together, "
         "weights and runs; a run that needs more fails at once with 503 (gRPC RESOURCE_EXHAUSTED) "
         "(default: half the machine's or the container's memory)"),
        ("--grpc-stream-inflight", 8, "requests of one gRPC stream answered at once; the stream's next "
         "request is read when one finishes"),
        ("--max-header-bytes", 64 << 10, "largest request line and headers of an HTTP request (431 beyond)"),
        ("--max-connections", 1000, "most open HTTP connections on each of the REST and gRPC ports; more are answered "
         "(503, gRPC GOAWAY) and closed"),
    ]
    for flag, default, text in limits:
        shown = "" if default is None else " (default: %(default)s)"
        group.add_argument(flag, type=_count(0 if flag != "--grpc-stream-inflight" else 1), default=default,
                           metavar="N", help=text + shown)
    group.add_argument("--header-timeout", type=_seconds, default=10.0, metavar="S",
                       help="seconds an HTTP request's headers, or a gRPC connection's preface, may take to arrive "
                       "(408, GOAWAY after) (default: %(default)s)")
    group.add_argument("--body-timeout", type=_seconds, default=30.0, metavar="S",
                       help="seconds an HTTP request body may pause between two pieces (408 after) "
                       "(default: %(default)s)")


def _admission(args):
    """The model limits and the in-flight admission the flags set; sets the inference memory budget."""
    from serve.dataplane import Admission
    from serve.http_guard import raise_open_file_limit
    from serve.model import ModelLimits
    from serve.runtime import configure_memory, default_memory_budget

    memory = default_memory_budget() if args.max_inference_memory is None else args.max_inference_memory
    configure_memory(memory)
    if args.max_connections:
        # The REST and gRPC ports may each hold --max-connections sockets.
        ports = 2 if args.grpc_port else 1
        args.max_connections = max(1, raise_open_file_limit(ports * args.max_connections) // ports)
    limits = ModelLimits(args.max_request_elements, args.max_model_elements, args.max_queue_size)
    return limits, Admission(args.max_inflight_requests, args.max_inflight_bytes)


def _add_network(group) -> None:
    """Where the server listens and how much it reads."""
    group.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind, for every port; 127.0.0.1 answers this machine only: in a container, or to be "
        "reached from other machines, use 0.0.0.0 (all interfaces) (default: %(default)s)",
    )
    group.add_argument("--port", type=_count(0), default=8000, help="TCP port (default: %(default)s)")
    group.add_argument(
        "--grpc-port",
        type=_count(0),
        default=8001,
        metavar="PORT",
        help="TCP port of the gRPC service (inference.GRPCInferenceService) on the same host; "
        "0 turns gRPC off (default: %(default)s)",
    )
    group.add_argument(
        "--metrics-port",
        type=_count(0),
        default=0,
        metavar="PORT",
        help="also serve GET /metrics (Prometheus text) on this TCP port of the same host, as Triton's "
        "metrics port (8002) does; /metrics stays on --port too; 0: no separate port (default: %(default)s)",
    )
    group.add_argument(
        "--max-request-bytes",
        type=_count(1),
        default=64 * 1024 * 1024,
        metavar="N",
        help="largest accepted request body; larger ones get 413 (default: %(default)s)",
    )


def _add_devices(group) -> None:
    """Which device runs the models, and how many runs overlap."""
    group.add_argument(
        "--device",
        type=_device,
        default="auto",
        metavar="{auto,cpu,cuda,cuda:N}",
        help="auto: CUDA (GPU 0) when onnxruntime offers it, else CPU; cuda or cuda:N: fail unless CUDA runs the "
        "models, on GPU N (default 0); a model's config.pbtxt instance_group (KIND_CPU, or KIND_GPU with gpus: [N]) "
        "overrides it for that model (default: %(default)s)",
    )
    group.add_argument(
        "--cuda-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of onnxruntime's CUDA execution provider (e.g. gpu_mem_limit=4294967296, "
        "arena_extend_strategy=kSameAsRequested, use_tf32=0); repeatable; the server's defaults are "
        + ", ".join(f"{k}={v}" for k, v in CUDA_DEFAULTS.items()),
    )
    group.add_argument(
        "--threads",
        type=_count(1),
        default=default_threads(),
        metavar="N",
        help="inference threads: how many session runs may be in flight at once (default: %(default)s)",
    )
    group.add_argument(
        "--inline-run-us",
        type=_count(0),
        default=1000,
        metavar="N",
        help="with one inference thread, a merged run expected to take at most N microseconds (from the model's "
        "last runs of the same input shape) runs on the event loop, without the hand-off to the thread and back; "
        "0: never (default: %(default)s)",
    )
    group.add_argument(
        "--intra-op-threads",
        type=_count(0),
        default=0,
        metavar="N",
        help="threads onnxruntime uses inside one run; 0 lets onnxruntime choose (default: %(default)s)",
    )


def _add_batching(group) -> None:
    """How concurrent requests are merged into one run."""
    group.add_argument(
        "--max-batch-size",
        type=_count(0),
        default=64,
        metavar="N",
        help="most rows one merged run may hold; 0 or 1 turns dynamic batching off (default: %(default)s)",
    )
    group.add_argument(
        "--no-batching",
        action="store_true",
        help="run every request on its own (same as --max-batch-size 0)",
    )
    group.add_argument(
        "--max-queue-delay-us",
        type=_count(0),
        default=0,
        metavar="N",
        help="how long a batch waits for more requests after its first one arrived, in microseconds; "
        "with 0 a batch takes whatever queued while the previous runs were busy (default: %(default)s)",
    )


def _add_repository(group) -> None:
    """How models are loaded, who may change them, and logging."""
    group.add_argument(
        "--model-control-mode",
        choices=MODES,
        default="none",
        help="none: load every model at startup, never again; poll: also pick up new, changed and removed "
        "models and versions in the repository, loading them while the old ones serve; explicit: load every model "
        "at startup, then load, reload and unload on request (POST /v2/repository/models/NAME/load and /unload, "
        "or gRPC) (default: %(default)s)",
    )
    group.add_argument(
        "--repository-poll-secs",
        type=_seconds,
        default=15.0,
        metavar="S",
        help="how often poll mode looks for changes in the repository (default: %(default)s)",
    )
    group.add_argument(
        "--restricted-api",
        type=_restriction,
        metavar="CATEGORY:KEY=VALUE",
        help="require header (gRPC metadata) KEY with VALUE on an API category; the category "
        "'model-repository' covers the repository index, load and unload "
        "(e.g. model-repository:admin-key=s3cret)",
    )
    group.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="log verbosity (default: %(default)s)",
    )
    group.add_argument(
        "--log-verbose",
        type=_count(0),
        nargs="?",
        const=1,
        default=0,
        metavar="N",
        help="1 (or the flag alone): an access log line per HTTP request (client, request line, status) and per "
        "gRPC call (peer, method, status, milliseconds), at info level; --log-level debug turns it on too "
        "(default: %(default)s)",
    )


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _server(app, args, repository):
    """uvicorn's server for ``app``, reporting not-ready as soon as a shutdown signal arrives."""
    import uvicorn

    from serve.http_guard import ConnectionLimits, guarded_protocol

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:
            """Start draining: readiness turns 503 while accepted requests finish."""
            repository.begin_drain()
            super().handle_exit(sig, frame)

    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        log_config=None,
        access_log=args.log_verbose > 0 or args.log_level == "debug",
        lifespan="on",
        server_header=False,
        proxy_headers=False,
        http=guarded_protocol(
            ConnectionLimits(args.max_header_bytes or 1 << 62, args.header_timeout, args.body_timeout,
                             args.max_connections or 1 << 62)
        ),
    )
    return Server(config)


def _metrics_server(args, plane):
    """The server of --metrics-port, or None."""
    from serve.metrics import MetricsServer

    return MetricsServer(plane.exposition, args.host, args.metrics_port) if args.metrics_port else None


def main(argv: list[str] | None = None) -> int:
    """Run the server until SIGTERM or SIGINT; returns the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    from serve.app import create_app
    from serve.config import RepositoryError
    from serve.control import ModelControl
    from serve.dataplane import DataPlane
    from serve.grpc_server import GrpcServer, InferenceServicer
    from serve.repository import Repository, model_names
    from serve.runtime import InferencePool, RuntimeSetupError, parse_cuda_options, select_providers

    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname)s %(message)s",
    )
    try:
        cuda_options = parse_cuda_options(args.cuda_option)
        placement = select_providers(args.device, cuda_options)
        if not model_names(args.path):
            raise RepositoryError(
                f"{args.path} holds no models (expected NAME/config.pbtxt and NAME/<version>/model.onnx)"
            )
    except (RuntimeSetupError, RepositoryError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    if args.model_control_mode == "explicit" and args.restricted_api is None and not _loopback(args.host):
        logger.warning(
            "model control is explicit and unrestricted on %s: anyone who can reach the port can load and "
            "unload models; add --restricted-api model-repository:KEY=VALUE",
            args.host,
        )
    max_batch_size = 0 if args.no_batching else args.max_batch_size
    pool = InferencePool(args.threads, args.inline_run_us / 1e6)
    model_limits, admission = _admission(args)
    repository = Repository(
        args.path, placement, args.intra_op_threads, pool, max_batch_size, args.max_queue_delay_us, cuda_options,
        model_limits,
    )
    control = ModelControl(repository, args.model_control_mode, args.repository_poll_secs)
    server = None
    status: list[int] = []

    def stop(code: int) -> None:
        status.append(code)
        server.should_exit = True

    plane = DataPlane(repository, control, args.restricted_api, admission)
    grpc_server = None
    if args.grpc_port:
        servicer = InferenceServicer(plane, args.grpc_stream_inflight)
        grpc_server = GrpcServer(servicer, args.host, args.grpc_port, args.max_request_bytes,
                                 access_log=args.log_verbose > 0 or args.log_level == "debug",
                                 max_connections=args.max_connections or 1 << 62, preface_timeout_s=args.header_timeout)
    app = create_app(plane, pool, args.max_request_bytes, on_fatal=stop, grpc_server=grpc_server,
                     max_json_bytes=args.max_json_bytes, metrics_server=_metrics_server(args, plane),
                     http_bound=lambda: server.started)
    server = _server(app, args, repository)
    logger.info(
        "serving %s on http://%s:%d%s with %s, %d inference thread(s), %s, model control %s",
        args.path,
        args.host,
        args.port,
        f" and grpc port {args.grpc_port}" if args.grpc_port else "",
        placement.describe(),
        args.threads,
        f"batching up to {max_batch_size} rows" if max_batch_size > 1 else "batching off",
        args.model_control_mode,
    )
    # uvicorn re-raises the signal that stopped it once shutdown is complete; a handler
    # that ignores it keeps the exit status 0 after a graceful drain.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: None)
    server.run()
    if status:
        return status[0]
    logger.info("shut down cleanly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
