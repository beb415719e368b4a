# Sourced by the shell tests that start a rendezvous store: free_port prints a TCP port that was free a moment
# ago. The kernel picks it (bind to port 0, as tests/dist_test.cpp and scripts/launch.sh do), so two tests running
# at once (ctest -j) or a listener left by something else cannot be handed the same port the way a random pick
# can (cli.launch_torchrun_restart once failed with EADDRINUSE on one). Without python3, a random port below the
# kernel's ephemeral range.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 12000))
}
