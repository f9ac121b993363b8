// tinyops' one native kernel: softsign(x) = x / (1 + |x|) on float32 buffers, as an XLA FFI
// handler. run.sh compiles it into tinyops/native/libtinyops_native.so when a C++ compiler is
// present; tinyops.native registers it with jax as the custom-call target "tinyops_softsign".
#include <cmath>
#include <cstdint>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

static ffi::Error SoftsignImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  const float* in = x.typed_data();
  float* out = y->typed_data();
  const int64_t n = static_cast<int64_t>(x.element_count());
  for (int64_t i = 0; i < n; ++i) out[i] = in[i] / (1.0f + std::fabs(in[i]));
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(TinyopsSoftsign, SoftsignImpl,
                              ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());
