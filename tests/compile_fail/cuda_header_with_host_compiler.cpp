// expect: CUDA headers: compile this file with nvcc
// The CUDA backend's headers refuse a host-only compiler with a message (not a cascade of errors
// about __global__). Must NOT compile with g++/clang++ in C++ mode.
#include "../../kernels/hybridcache/cuda/config.cuh"

int main() {}
