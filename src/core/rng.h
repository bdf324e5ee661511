// rng.h: a small seeded RNG (xorshift64* seeded through splitmix64) whose streams are identical on every
// machine and compiler, unlike std::normal_distribution. Used for init, data shuffling and sampling.
#pragma once
#include <cmath>
#include <cstdint>

// splitmix64's finalizer: nearby inputs give unrelated outputs.
inline uint64_t splitmix64_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

struct Rng {
    uint64_t state;
    // a splitmix64 step, so that nearby seeds give unrelated streams and state is never zero
    explicit Rng(uint64_t seed = 1337) : state(splitmix64_mix(seed + 0x9E3779B97F4A7C15ull) | 1) {}
    uint32_t next_u32() {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        return (uint32_t)((state * 0x2545F4914F6CDD1Dull) >> 32);
    }
    float uniform() { return (next_u32() >> 8) * (1.0f / 16777216.0f); }  // [0, 1)
    uint32_t below(uint32_t n) { return (uint32_t)(((uint64_t)next_u32() * n) >> 32); }
    // Standard normal by Box-Muller, one value per call (the pair's second is dropped: the state stays one integer).
    float normal() {
        const float u1 = fmaxf(uniform(), 1e-12f), u2 = uniform();
        return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853071795864f * u2);
    }
};
