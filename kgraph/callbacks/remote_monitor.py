"""RemoteMonitor: POST each epoch's logs to a server as JSON."""
import json
import urllib.error
import urllib.parse
import urllib.request
import warnings

import numpy as np

from kgraph.callbacks.callback import Callback


class RemoteMonitor(Callback):
    """At each epoch's end, POST ``{"epoch": epoch, **logs}`` to ``root + path``.

    By default the body is a form whose field ``field`` holds the JSON text (Keras's format); with
    ``send_as_json`` the body is the JSON itself (``Content-Type: application/json``). ``headers`` are added to
    the request. A server that cannot be reached gives a warning, not an error.
    """

    def __init__(self, root="http://localhost:9000", path="/publish/epoch/end/", field="data", headers=None,
                 send_as_json=False, timeout=10.0):
        super().__init__()
        self.root = root
        self.path = path
        self.field = field
        self.headers = headers
        self.send_as_json = send_as_json
        self.timeout = timeout

    def on_epoch_end(self, epoch, logs=None):
        send = {"epoch": epoch}
        for key, value in (logs or {}).items():
            send[key] = value.item() if isinstance(value, (np.ndarray, np.generic)) else value
        headers = dict(self.headers or {})
        if self.send_as_json:
            body = json.dumps(send).encode("utf-8")
            headers.setdefault("Content-Type", "application/json")
        else:
            body = urllib.parse.urlencode({self.field: json.dumps(send)}).encode("utf-8")
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
        request = urllib.request.Request(self.root + self.path, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                response.read()
        except (urllib.error.URLError, OSError, ValueError):
            warnings.warn(f"Could not reach RemoteMonitor root server at {self.root}", stacklevel=2)
