# bfloat16_gemm_here NCE: true where this CPU makes oneDNN bfloat16 matmuls (AVX-512 or newer).
# Elsewhere nce refuses --gemm-precision bfloat16 with one line naming the CPU and the fix;
# then this prints that line as a skip and is false, so a test leaves its bfloat16 checks out.
# A refusal of any other kind is true: the checks that follow run and fail with it.
bfloat16_gemm_here() {
    local refusal
    refusal=$("$1" bench loss infonce --n 8 --d 4 --reps 1 --gemm-precision bfloat16 2>&1 >/dev/null)
    if [[ $? -ne 0 && $(printf '%s\n' "$refusal" | wc -l) -eq 1 &&
          "$refusal" == *"oneDNN cannot make a bfloat16 matmul on this CPU"*"use --gemm-precision float32"* ]]; then
        echo "skip: bfloat16 GEMM checks, not available here: $refusal"
        return 1
    fi
    return 0
}
