#!/bin/bash
# The two-GPU run behind tests/data/nccl-h100x2/ (issue 30): run from the repository root on a
# machine with 2 GPUs. Writes everything under $OUT (or ./nccl-out).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-4}
OUT=${OUT:-$PWD/nccl-out}
W=/tmp/nccl; rm -rf $W; mkdir -p $W
nvidia-smi -L; nvidia-smi topo -m 2>&1 | head -4
python3 -c 'import torch, transformers, triton; print("torch", torch.__version__, "transformers", transformers.__version__, "triton", triton.__version__, "gpus", torch.cuda.device_count())'
launch() {  # job, then extra env as NAME=VALUE
  local job=$1; shift
  mkdir -p $W/$job
  env IPYC_JOB_OUT=$W/$job/out "$@" timeout ${JOB_TIMEOUT:-300} python3 -m ipycompile torchrun --trace-dir $W/$job/trace \
    -o $W/$job/report.html --standalone --nproc-per-node 2 tests/nccl_jobs.py $job > $W/$job/launcher.log 2>&1
  echo "$job: launcher exit $?" >> $W/status.txt
}
gathered() {  # capture(ranks="gather") inside every rank, with TORCH_TRACE of the same processes
  local job=$1 name=$2; shift 2
  mkdir -p $W/$name
  env IPYC_CAPTURE=gather IPYC_DIAG=1 IPYC_JOB_OUT=$W/$name/out TORCH_TRACE=$W/$name/trace "$@" timeout ${JOB_TIMEOUT:-300} \
    torchrun --standalone --nproc-per-node 2 tests/nccl_jobs.py $job > $W/$name/job.log 2>&1
  echo "$name: torchrun exit $?" >> $W/status.txt
}
T0=$(date +%s)
launch ddp & launch fsdp2 & launch diverge & gathered ddp gather-ddp & wait
echo "parallel jobs: $(( $(date +%s) - T0 )) s" >> $W/status.txt
T1=$(date +%s)
launch collective
echo "collective: $(( $(date +%s) - T1 )) s" >> $W/status.txt
${EXTRA_STEP:-true}
cat $W/status.txt
for d in $W/*/; do echo "=== $d"; tail -25 $d/launcher.log 2>/dev/null || tail -25 $d/job.log; cat $d/out/capture_rank*.json 2>/dev/null | grep -v '"summary"'; done
du -sh $W/*/trace
mkdir -p $OUT
tar czf $OUT/nccl-logs.tgz -C $W --exclude=out .
tar czf $OUT/nccl-out.tgz -C $W $(cd $W && ls -d */out status.txt)
ls -la $OUT
