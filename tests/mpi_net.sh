#!/usr/bin/env bash
# mpi_net.sh (make test-mpi): data parallelism over a real network stack. Two Linux network namespaces
# joined by a veth pair, each rank in its own, OpenMPI forced onto TCP over the veth (no shared memory),
# the link shaped with tc to 1 Gbit/s and then 10 Gbit/s each way:
#   * 2 ranks x B=2 across the link give the losses of 1 process x B=4 (1e-5 relative);
#   * the gradient really crossed the veth: its byte counters grew by at least the all-reduce's traffic;
#   * at each bandwidth, a GPT-2 124M step's time and its wait for the sums are printed beside the budget
#     tests/bench_results.md works out (a ring all-reduce moves 2(N-1)/N of the gradient per rank). Times are printed,
#     never asserted.
# Needs root (CAP_NET_ADMIN), ip and tc (iproute2); where namespaces cannot be made, says so and skips.
# mpirun runs in the first namespace and starts rank 1 through `ip netns exec` into the second: OpenMPI's
# PMIx server then has to accept its rank over the veth (PMIX_MCA_ptl_tcp_remote_connections), since each
# namespace has its own loopback.
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1
W=$TEST_TMP
NS0=gpt2n0-$$ NS1=gpt2n1-$$ V0=gv0-$$ V1=gv1-$$ NET=10.231.$(($$ % 250)).
cleanup() {
    ip netns del $NS0 2>/dev/null
    ip netns del $NS1 2>/dev/null
    rm -rf "$TEST_TMP"
}
at_exit cleanup
if ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
    skip "network namespaces: ip or tc not found (iproute2)"; summary; exit
fi
if ! command -v mpirun >/dev/null || [ ! -x "${GPT2_MPI:-}" ]; then
    fail "mpirun or \$GPT2_MPI (${GPT2_MPI:-unset}) not found: make MPI=1, openmpi-bin"; summary; exit
fi
if ! ip netns add $NS0 2>$W/err || ! ip netns add $NS1 2>>$W/err; then
    skip "network namespaces not permitted here: $(head -1 $W/err)"; summary; exit
fi
ip link add $V0 netns $NS0 type veth peer name $V1 netns $NS1 &&
    ip -n $NS0 addr add ${NET}1/24 dev $V0 && ip -n $NS1 addr add ${NET}2/24 dev $V1 &&
    ip -n $NS0 link set $V0 up && ip -n $NS1 link set $V1 up &&
    ip -n $NS0 link set lo up && ip -n $NS1 link set lo up
check "a veth pair joins the two namespaces" test $? = 0

shape() {  # RATE BURST: both ends of the link
    ip netns exec $NS0 tc qdisc replace dev $V0 root tbf rate $1 burst $2 latency 100ms &&
        ip netns exec $NS1 tc qdisc replace dev $V1 root tbf rate $1 burst $2 latency 100ms
}
tx_bytes() { ip -n $NS0 -s -j link show $V0 | grep -o '"tx":{"bytes":[0-9]*' | grep -o '[0-9]*$'; }
across() {  # FLAGS...: `gpt2-mpi FLAGS`, rank 0 in the first namespace, rank 1 in the second
    ip netns exec $NS0 env PMIX_MCA_ptl_tcp_remote_connections=1 PMIX_MCA_ptl_tcp_if_include=${NET}0/24 \
        mpirun --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 --mca btl tcp,self \
        --mca btl_tcp_if_include ${NET}0/24 --mca oob_tcp_if_include ${NET}0/24 \
        -np 1 "$GPT2_MPI" "$@" : -np 1 ip netns exec $NS1 "$GPT2_MPI" "$@"
}
if ! shape 1gbit 1mb 2>$W/err; then
    skip "tc cannot shape the veth here (tbf): $(head -1 $W/err)"; summary; exit
fi

TOK=tests/fixtures/tokens_v1000.bin
A=(train --model tests/fixtures/trained_tiny --train $TOK --val $TOK --val-every 10 --val-batches 4 -T 16
   --sample-tokens 0 --lr 3e-3 --warmup 2 --steps 20)
"$GPT2_MPI" "${A[@]}" -B 4 --log $W/one.jsonl >$W/one.out 2>&1
across "${A[@]}" -B 2 --log $W/two.jsonl >$W/two.out 2>&1
log_losses $W/one.jsonl >$W/l1; log_losses $W/two.jsonl >$W/l2
check "2 ranks in 2 namespaces over TCP, 1 Gbit/s: the 22 losses of 1 process x B=4 (1e-5 relative)" \
    eval '[ $(wc -l <$W/l2) = 22 ] && rel_close $W/l1 $W/l2'
cat $TEST_TMP/out
[ -s $W/l2 ] || grep -v '^ *$' $W/two.out | tail -5

# GPT-2 124M, random init: 124.5M fp32 gradients (498 MB), B=1 T=64 per rank, 4 steps per bandwidth.
G=(train --layers 12 --heads 12 --channels 768 --seq-len 1024 --train $TOK --val "" --sample-tokens 0 -B 1 -T 64
   --steps 4)
grad_mb=498
for bw in "1:1gbit:1mb" "10:10gbit:10mb"; do
    IFS=: read -r gbit rate burst <<<"$bw"
    shape $rate $burst
    before=$(tx_bytes)
    across "${G[@]}" --log $W/net$gbit.jsonl >$W/net$gbit.out 2>&1
    rc=$?
    sent=$(( $(tx_bytes) - before ))
    step_ms=$(grep -o '"ms":[0-9.]*' $W/net$gbit.jsonl 2>/dev/null | tail -3 | cut -d: -f2 | sort -n | sed -n 2p)
    wait_ms=$(grep -o '[0-9.]* ms per step waiting' $W/net$gbit.out | cut -d' ' -f1)
    budget=$(awk -v mb=$grad_mb -v g=$gbit 'BEGIN { printf("%.0f", 2 * (2 - 1) / 2 * mb * 8 / g) }')
    echo "124M over $gbit Gbit/s: step ${step_ms:-?} ms (median of the last 3), waiting for the sums ${wait_ms:-?} ms per step; budget ${budget} ms; ${sent} bytes sent by rank 0's end"
    check "124M, $gbit Gbit/s: 2 ranks train over the veth (exit $rc)" test $rc = 0
    check "... and rank 0 sent at least the all-reduce's share of 4 steps' gradients over it ($((sent / 1000000)) MB)" \
        test "$sent" -ge $((4 * grad_mb * 1000000 * 9 / 10))
done
summary
