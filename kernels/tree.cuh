// The exact arithmetic of the fixed-order reductions, shared by segment_reduce.cu and
// normalize.cu (include it after ``typedef ... gs_t``): float32 steps are explicit PTX
// without .ftz, so they keep subnormals whatever -ftz flag compiles the module; float64
// steps are the _rn intrinsics; no step is contracted into an FMA. gs_combine_op is a
// reduction's step (sum, or max propagating NaN), gs_binary an edge broadcast's, and
// gs_push / gs_close feed a sequence of chunk values into the tree the segment-reduce
// kernels compute (segment_reduce.cu states the order).
#pragma once

// ----------------------------------------------------------------------------- arithmetic
__device__ __forceinline__ float gs_add(float a, float b) {
    float r; asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
}
__device__ __forceinline__ float gs_sub(float a, float b) {
    float r; asm("sub.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
}
__device__ __forceinline__ float gs_mul(float a, float b) {
    float r; asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
}
__device__ __forceinline__ float gs_div(float a, float b) {
    float r; asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
}
__device__ __forceinline__ bool gs_gt(float a, float b) {     // a > b, subnormals kept
    unsigned r;
    asm("{\n\t.reg .pred p;\n\tsetp.gt.f32 p, %1, %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(r) : "f"(a), "f"(b));
    return r != 0;
}
__device__ __forceinline__ bool gs_isnan(float a) {
    unsigned r;
    asm("{\n\t.reg .pred p;\n\tsetp.nan.f32 p, %1, %1;\n\tselp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(r) : "f"(a));
    return r != 0;
}
__device__ __forceinline__ double gs_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double gs_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double gs_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double gs_div(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ bool gs_gt(double a, double b) { return a > b; }
__device__ __forceinline__ bool gs_isnan(double a) { return a != a; }

// op codes shared with compute.py
#define GS_SUM 0
#define GS_MAX 1
#define GS_OP_ADD 0
#define GS_OP_SUB 1
#define GS_OP_MUL 2
#define GS_OP_DIV 3
// where a per-edge operand is read (compute.py: PER_EDGE, PER_COL, PER_ROW)
#define GS_AT_EDGE 0
#define GS_AT_COL 1
#define GS_AT_ROW 2

// max propagates NaN (as torch's segment max): a NaN term wins, and once the running
// value is NaN no comparison is true
__device__ __forceinline__ gs_t gs_combine_op(gs_t acc, gs_t t, gs_i64 op) {
    if (op == GS_MAX) return (gs_isnan(t) || gs_gt(t, acc)) ? t : acc;
    return gs_add(acc, t);
}

__device__ __forceinline__ gs_t gs_binary(gs_t a, gs_t b, gs_i64 op) {
    switch (op) {
        case GS_OP_ADD: return gs_add(a, b);
        case GS_OP_SUB: return gs_sub(a, b);
        case GS_OP_MUL: return gs_mul(a, b);
        default: return gs_div(a, b);
    }
}

#define GS_LEVELS 8                          // 32 ** 8 leaves per stack

// Feed v, the next value of a sequence, into a stack of partial groups (acc[l], cnt[l]:
// level l's open group of 32): a full group of 32 becomes one value of the level above.
__device__ __forceinline__ void gs_push(gs_t* acc, int* cnt, gs_t v, gs_i64 op) {
    for (int l = 0; l < GS_LEVELS; ++l) {
        acc[l] = cnt[l] == 0 ? v : gs_combine_op(acc[l], v, op);
        if (++cnt[l] < 32) return;
        v = acc[l];                          // a full group: one term of the level above
        cnt[l] = 0;
    }
}

// The tree of a non-empty sequence fed through gs_push: close the partial groups from the
// bottom up (each is the last chunk of its level); the top group is the root's one chunk.
__device__ __forceinline__ gs_t gs_close(gs_t* acc, int* cnt, gs_i64 op) {
    int top = GS_LEVELS - 1;
    while (cnt[top] == 0) --top;
    for (int l = 0; l < top; ++l) {
        if (cnt[l] == 0) continue;
        const gs_t closed = acc[l];
        cnt[l] = 0;
        acc[l + 1] = cnt[l + 1] == 0 ? closed : gs_combine_op(acc[l + 1], closed, op);
        ++cnt[l + 1];
    }
    return acc[top];
}
