"""``RemoteMonitor`` posting each epoch's logs to a local server in Keras's two formats, and the callbacks kgraph
refuses with their reasons."""
import http.server
import json
import threading
import urllib.parse

import numpy as np
import pytest

import kgraph
from kgraph import callbacks


class _Recorder(http.server.BaseHTTPRequestHandler):
    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Recorder.received.append((self.path, dict(self.headers), body.decode("utf-8")))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    _Recorder.received = []
    httpd = http.server.HTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _fit(monitor, epochs=2):
    model = kgraph.Sequential([kgraph.Input((3,)), kgraph.layers.Dense(1)])
    model.compile("sgd", "mse", metrics=["mae"])
    x, y = np.ones((8, 3), "float32"), np.ones((8, 1), "float32")
    return model.fit(x, y, epochs=epochs, verbose=0, callbacks=[monitor])


def test_remote_monitor_posts_a_form_field_of_json(server):
    history = _fit(callbacks.RemoteMonitor(root=server, headers={"X-Run": "7"}))
    assert [path for path, _, _ in _Recorder.received] == ["/publish/epoch/end/"] * 2
    for epoch, (_, headers, body) in enumerate(_Recorder.received):
        assert headers["X-Run"] == "7" and headers["Content-Type"] == "application/x-www-form-urlencoded"
        form = urllib.parse.parse_qs(body)
        assert list(form) == ["data"]
        sent = json.loads(form["data"][0])
        assert sent["epoch"] == epoch and set(sent) == {"epoch", "loss", "mae"}
        assert sent["loss"] == pytest.approx(history.history["loss"][epoch])


def test_remote_monitor_send_as_json_and_numpy_values(server):
    monitor = callbacks.RemoteMonitor(root=server, path="/logs", send_as_json=True)
    monitor.on_epoch_end(3, {"loss": np.float32(0.5), "lr": np.array(0.1), "note": "x"})
    path, headers, body = _Recorder.received[0]
    assert path == "/logs" and headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"epoch": 3, "loss": 0.5, "lr": pytest.approx(0.1), "note": "x"}


def test_remote_monitor_warns_when_the_server_is_unreachable():
    with pytest.warns(UserWarning, match="Could not reach RemoteMonitor root server"):
        callbacks.RemoteMonitor(root="http://127.0.0.1:9", timeout=2).on_epoch_end(0, {"loss": 1.0})


def test_remote_monitor_arguments_as_keras():
    keras = pytest.importorskip("keras")
    import inspect
    ours = inspect.signature(callbacks.RemoteMonitor).parameters
    theirs = inspect.signature(keras.callbacks.RemoteMonitor).parameters
    assert {n: p.default for n, p in theirs.items()} == {n: ours[n].default for n in theirs}


def test_orbax_checkpoint_says_why_it_is_refused():
    with pytest.raises(ImportError, match="Orbax"):
        callbacks.OrbaxCheckpoint("/tmp/checkpoints")
