// kernel_refs.h: plain scalar references of core/layers.h's vectorised kernels, the same contracts, written
// for reading rather than speed; test_layers.cpp compares the kernels against them (and against float64).
#pragma once
#include <cstddef>

void gelu_forward_ref(float* out, const float* inp, size_t n);
void gelu_backward_ref(float* dinp, const float* inp, const float* dout, size_t n);
void crossentropy_fused_ref(float* logits, float* losses, const int* targets, int N, int V, int Vp, float dloss,
                            float scale);
void attention_forward_ref(float* out, float* lse, const float* qkv, int B, int T, int C, int NH);
void attention_backward_ref(float* dqkv, const float* dout, const float* qkv, const float* lse, int B, int T, int C,
                            int NH);
