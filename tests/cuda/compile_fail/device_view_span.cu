// expect: (no operator "\[\]"|constraints not satisfied|no matching)
// A device buffer has no host span/operator[]: the CPU cannot touch device memory. Must NOT
// compile.
#include <hybridcache/cuda/storage/device_heap.cuh>

int main() {
  hybridcache::cuda::device_buffer<float> d(4);
  return static_cast<int>(d[0]);
}
