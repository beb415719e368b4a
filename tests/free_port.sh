# Sourced by the shell tests that start a rendezvous store: free_port prints a TCP port that was free a moment
# ago, drawn at random below the kernel's ephemeral range (net.ipv4.ip_local_port_range starts at 32768), so no
# outgoing connection can be handed it as its own port, and probed by binding it, so a port another test or
# process holds is skipped (cli.launch_torchrun_restart once failed with EADDRINUSE on a random pick). A port from
# bind(0) would be an ephemeral one: a client retrying a store that has gone can then connect to itself.
free_port() {
  python3 - 2>/dev/null <<'PY' || echo $((20000 + RANDOM % 12000))
import random, socket
for _ in range(200):
    port = random.randrange(20000, 32000)
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
    print(port)
    break
else:
    raise SystemExit(1)
PY
}
