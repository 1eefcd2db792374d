// Symbols that sgl-deep-gemm 0.2.5's _C.so (built against a newer PyTorch) expects and the lent machine's PyTorch 2.11
// lacks, written for this measurement only: the CUDA-driver log capture (a no-op), the 6-argument CUDA error check,
// TensorBase::const_data_ptr<float>, and torch::Library::_def taking the newer header-only Tag vector (forwarded to
// 2.11's at::Tag form; DeepGEMM registers its ops with no tags). Built against the device's torch headers.
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>
#include <torch/library.h>
#include <ATen/core/TensorBase.h>

namespace c10 { namespace cuda {
struct CUDAErrorLogCapture { CUDAErrorLogCapture() noexcept; };
CUDAErrorLogCapture::CUDAErrorLogCapture() noexcept {}
void c10_cuda_check_implementation(int err, const char* file, const char* fn, unsigned int line, bool,
                                   CUDAErrorLogCapture*) {
  if (err == 0) return;
  (void)cudaGetLastError();
  throw std::runtime_error(std::string("CUDA error: ") + cudaGetErrorString(static_cast<cudaError_t>(err)) +
                           " (" + file + ":" + std::to_string(line) + " " + fn + ")");
}
}}

// private-member access through explicit instantiation (legal C++): the two 2.11 torch::Library::_def overloads
template <typename Key, typename Key::type M> struct Rob { friend typename Key::type get(Key) { return M; } };
struct DefSchema {
  using type = torch::Library& (torch::Library::*)(c10::FunctionSchema&&, c10::OperatorName*,
                                                   const std::vector<at::Tag>&, torch::_RegisterOrVerify) &;
  friend type get(DefSchema);
};
struct DefFn {
  using type = torch::Library& (torch::Library::*)(std::variant<c10::OperatorName, c10::FunctionSchema>&&,
                                                   torch::CppFunction&&, const std::vector<at::Tag>&) &;
  friend type get(DefFn);
};
template struct Rob<DefSchema, &torch::Library::_def>;
template struct Rob<DefFn, &torch::Library::_def>;

struct AnyVec { void* b; void* e; void* c; };   // a std::vector's three pointers, whatever its element type

static std::vector<at::Tag> tags_of(const AnyVec& v) {
  if (v.b != v.e) throw std::runtime_error("c10_shim: op tags are not forwarded");
  return {};
}

extern "C++" {
const float* shim_const_data_ptr_float(const at::TensorBase* t)
    __asm__("_ZNK2at10TensorBase14const_data_ptrIfEEPKT_v");
const float* shim_const_data_ptr_float(const at::TensorBase* t) {
  return static_cast<const float*>(t->const_data_ptr());
}
torch::Library* shim_def_schema(torch::Library* self, c10::FunctionSchema&& s, c10::OperatorName* out,
                                const AnyVec& tags, torch::_RegisterOrVerify rv)
    __asm__("_ZNR5torch7Library4_defEON3c1014FunctionSchemaEPNS1_12OperatorNameERKSt6vectorINS_10headeronly3TagESaIS8_EENS_17_RegisterOrVerifyE");
torch::Library* shim_def_schema(torch::Library* self, c10::FunctionSchema&& s, c10::OperatorName* out,
                                const AnyVec& tags, torch::_RegisterOrVerify rv) {
  return &((*self).*get(DefSchema{}))(std::move(s), out, tags_of(tags), rv);
}
torch::Library* shim_def_fn(torch::Library* self, std::variant<c10::OperatorName, c10::FunctionSchema>&& n,
                            torch::CppFunction&& f, const AnyVec& tags)
    __asm__("_ZNR5torch7Library4_defEOSt7variantIJN3c1012OperatorNameENS2_14FunctionSchemaEEEONS_11CppFunctionERKSt6vectorINS_10headeronly3TagESaISB_EE");
torch::Library* shim_def_fn(torch::Library* self, std::variant<c10::OperatorName, c10::FunctionSchema>&& n,
                            torch::CppFunction&& f, const AnyVec& tags) {
  return &((*self).*get(DefFn{}))(std::move(n), std::move(f), tags_of(tags));
}
}
