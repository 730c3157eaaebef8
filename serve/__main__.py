"""Command line: python -m serve PATH [options]."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import signal
import sys
from pathlib import Path

import uvicorn

from serve.app import create_app
from serve.config import RepositoryError
from serve.control import MODES, ModelControl, Restriction
from serve.dataplane import DataPlane
from serve.grpc_server import GrpcServer, InferenceServicer
from serve.repository import Repository, model_names
from serve.runtime import (
    CUDA_DEFAULTS,
    InferencePool,
    RuntimeSetupError,
    default_threads,
    parse_cuda_options,
    parse_device,
    select_providers,
)

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
    try:
        parse_device(text)
    except RuntimeSetupError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _restriction(text: str) -> Restriction:
    try:
        return Restriction.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    parser = argparse.ArgumentParser(
        prog="python -m serve",
        description=(
            "Serve ONNX models with onnxruntime over the Open Inference Protocol "
            "(KServe V2 / Triton, REST and gRPC), with dynamic batching."
        ),
        epilog=(
            "Dynamic batching merges concurrent requests for a model along axis 0 into one run. "
            "Turn it off with --no-batching (or --max-batch-size 0). "
            "A repository's config.pbtxt may set max_batch_size (0: never batch that model) and "
            "dynamic_batching { max_queue_delay_microseconds: N }, which override the flags for that model."
        ),
    )
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
    return parser


def _add_network(group) -> None:
    """Where the server listens and how much it reads."""
    group.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
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


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class _Server(uvicorn.Server):
    """uvicorn's server, reporting not-ready as soon as a shutdown signal arrives."""

    def __init__(self, config: uvicorn.Config, repository: Repository) -> None:
        super().__init__(config)
        self.repository = repository

    def handle_exit(self, sig, frame) -> None:
        """Start draining: readiness turns 503 while accepted requests finish."""
        self.repository.begin_drain()
        super().handle_exit(sig, frame)


def main(argv: list[str] | None = None) -> int:
    """Run the server until SIGTERM or SIGINT; returns the process exit status."""
    args = build_parser().parse_args(argv)
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
        print(f"python -m serve: error: {exc}", file=sys.stderr)
        return 2
    if args.model_control_mode == "explicit" and args.restricted_api is None and not _loopback(args.host):
        logger.warning(
            "model control is explicit and unrestricted on %s: anyone who can reach the port can load and "
            "unload models; add --restricted-api model-repository:KEY=VALUE",
            args.host,
        )
    max_batch_size = 0 if args.no_batching else args.max_batch_size
    pool = InferencePool(args.threads)
    repository = Repository(
        args.path, placement, args.intra_op_threads, pool, max_batch_size, args.max_queue_delay_us, cuda_options
    )
    control = ModelControl(repository, args.model_control_mode, args.repository_poll_secs)
    server: _Server | None = None

    def stop() -> None:
        server.should_exit = True

    plane = DataPlane(repository, control, args.restricted_api)
    grpc_server = None
    if args.grpc_port:
        grpc_server = GrpcServer(InferenceServicer(plane), args.host, args.grpc_port, args.max_request_bytes)
    app = create_app(plane, pool, args.max_request_bytes, on_fatal=stop, grpc_server=grpc_server)
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        log_config=None,
        access_log=False,
        lifespan="on",
        server_header=False,
        proxy_headers=False,
    )
    server = _Server(config, repository)
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
    if repository.state == "failed":
        return 1
    logger.info("shut down cleanly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
