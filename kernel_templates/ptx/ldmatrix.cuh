// ldmatrix (sm_75): four 8x8 16-bit matrices from shared memory into mma fragments; stmatrix (sm_90)
// the way back.
// Lanes 8i..8i+7 give the row addresses of matrix i; register i receives matrix i.
#pragma once

namespace fc {

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned address)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
}

// The transposed load: gives the col-major B fragment from a row-major (k, n) tile.
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned address)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
}

// The store (sm_90): lanes 8i..8i+7 give the row addresses of matrix i, register i holds its
// fragment as ldmatrix_x4 gives it (thread t: row t / 4, 16-bit columns 2 (t % 4), + 1).
__device__ __forceinline__ void stmatrix_x4(unsigned address, const unsigned (&r)[4])
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(address), "r"(r[0]),
                 "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
}

}  // namespace fc
