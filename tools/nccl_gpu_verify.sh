#!/bin/bash
# Second two-GPU run (issue 30): capture(ranks="gather") inside the ranks of the DDP and the
# diverging job (with TORCH_TRACE of the same processes), then the rank-scale benchmark on the
# machine's CPUs. Everything under $OUT (or ./nccl-out).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-4}
OUT=${OUT:-$PWD/nccl-out}; mkdir -p $OUT
W=/tmp/nccl2; rm -rf $W; mkdir -p $W
gathered() {
  local job=$1; mkdir -p $W/$job
  env IPYC_CAPTURE=gather IPYC_DIAG=1 IPYC_JOB_OUT=$W/$job/out TORCH_TRACE=$W/$job/trace timeout 240 \
    torchrun --standalone --nproc-per-node 2 tests/nccl_jobs.py $job > $W/$job/job.log 2>&1
  echo "$job: torchrun exit $?" >> $W/status.txt
}
T0=$(date +%s); gathered ddp & gathered diverge & wait; echo "jobs: $(( $(date +%s) - T0 )) s" >> $W/status.txt
cat $W/status.txt; grep -h "capture:" $W/*/job.log
tar czf $OUT/gather2.tgz -C $W .
timeout ${SCALE_TIMEOUT:-300} python3 benchmarks/ranks_scale.py --ranks ${SCALE_RANKS:-64,512,4096} 2>&1 | tee $OUT/scale.txt | head -5
cp benchmarks/results/ranks_scale-*.json $OUT/ 2>/dev/null
ls -la $OUT
