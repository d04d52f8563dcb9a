"""agent-sandbox's own Python client (k8s-agent-sandbox from PyPI) against littleghost-sandboxd.

Usage: [LITTLEGHOST_TOKEN=...] python agent_sandbox_client.py GRPC_HOST:PORT REST_PORT
Its filesystem client goes through its sandboxd connector, pointed at the daemon's addresses directly; its
generated process_pb2/process_pb2_grpc stubs run Execute and Start, piped and on a terminal (with ResizeTTY). With
LITTLEGHOST_TOKEN set, every call carries it (the connector's session headers for REST, call metadata for gRPC).
Prints one line per check; exits 1 on the first that fails.
"""

import os
import sys

import grpc
from k8s_agent_sandbox.commands._process_stubs import process_pb2, process_pb2_grpc
from k8s_agent_sandbox.connector import SandboxConnector
from k8s_agent_sandbox.exceptions import SandboxRequestError
from k8s_agent_sandbox.files.filesystem import Filesystem
from k8s_agent_sandbox.models import SandboxdInClusterConnectionConfig

grpc_target, rest_port = sys.argv[1], int(sys.argv[2])
grpc_host, grpc_port = grpc_target.rsplit(":", 1)


def check(name, condition, detail=""):
    if not condition:
        print(f"FAILED {name}: {detail}")
        sys.exit(1)
    print(f"ok {name}")


config = SandboxdInClusterConnectionConfig(mode="in-cluster-pod-ip", rest_port=rest_port, grpc_port=int(grpc_port))
connector = SandboxConnector("littleghost", "default", config, k8s_helper=None, get_pod_ip=lambda: grpc_host)
check("the connector speaks sandboxd", connector.is_sandboxd())
token = os.environ.get("LITTLEGHOST_TOKEN")
metadata = (("authorization", f"Bearer {token}"),) if token else None
if token:
    connector.session.headers["Authorization"] = f"Bearer {token}"
files = Filesystem(connector, None, "littleghost-test")

files.write("py/hello.txt", b"hello from python\n")
check("write then read", files.read("py/hello.txt") == b"hello from python\n")
listed = files.list("py")
names = [entry.name for entry in listed]
check("list", names == ["hello.txt"], repr(listed))
try:
    files.read("../../etc/passwd", allow_unsafe_paths=True)
    check("traversal refused", False, "read outside the root")
except SandboxRequestError as error:
    status = getattr(getattr(error, "response", None), "status_code", None)
    check("traversal refused", status == 403 or "403" in str(error), str(error))

channel = grpc.insecure_channel(grpc_target)
stub = process_pb2_grpc.ProcessServiceStub(channel)


def execute(argv):
    request = process_pb2.ExecuteRequest(config=process_pb2.ProcessConfig(command=argv))
    return stub.Execute(request, timeout=30, metadata=metadata)


executed = execute(["cat", "py/hello.txt"])
check("Execute", executed.exit_code == 0 and executed.stdout == b"hello from python\n", repr(executed))
shadow = execute(["cat", "/etc/shadow"])
check("Execute confined", shadow.exit_code != 0 and shadow.stdout == b"", repr(shadow))

start = process_pb2.StartRequest(config=process_pb2.ProcessConfig(command=["sh", "-c", "echo up; cat"]))
events = stub.Start(start, timeout=30, metadata=metadata)
first = next(events)
check("Start begins with InitEvent", first.WhichOneof("event") == "init", repr(first))
pid = first.init.process_id
out = b""
exit_code = None
sent = False
for event in events:
    kind = event.WhichOneof("event")
    if kind == "stdout":
        out += event.stdout
    elif kind == "exit":
        exit_code = event.exit.exit_code
        break
    if out.startswith(b"up\n") and not sent:
        sent = True
        for write in (process_pb2.WriteStdinRequest(process_id=pid, input=b"ping\n"),
                      process_pb2.WriteStdinRequest(process_id=pid, eof={})):
            stub.WriteStdin(write, timeout=10, metadata=metadata)
check("Start streams and takes stdin", out == b"up\nping\n" and exit_code == 0, repr((out, exit_code)))

# The same stubs with a terminal: the program sees its size, ResizeTTY changes it, WriteStdin types into it.
script = "stty size; read line; stty size; echo got:$line"
start = process_pb2.StartRequest(config=process_pb2.ProcessConfig(command=["sh", "-c", script]),
                                 pty=process_pb2.PTY(cols=100, rows=30))
events = stub.Start(start, timeout=30, metadata=metadata)
pid = next(events).init.process_id
out = b""
exit_code = None
for event in events:
    kind = event.WhichOneof("event")
    if kind == "stdout":
        out += event.stdout
        if out == b"30 100\r\n":
            stub.ResizeTTY(process_pb2.ResizeTTYRequest(process_id=pid, cols=101, rows=31), timeout=10,
                           metadata=metadata)
            stub.WriteStdin(process_pb2.WriteStdinRequest(process_id=pid, input=b"hi\n"), timeout=10,
                            metadata=metadata)
    elif kind == "exit":
        exit_code = event.exit.exit_code
        break
check("Start on a terminal, resized", out == b"30 100\r\nhi\r\n31 101\r\ngot:hi\r\n" and exit_code == 0,
      repr((out, exit_code)))
print("all checks passed")
