#loc1 = loc("x")
#loc2 = loc("y")
module @jit__pallas_fma_bf16 attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16x128xbf16> loc("x"), %arg1: tensor<16x128xbf16> loc("y")) -> (tensor<16x128xbf16> {jax.result_info = "result"}) {
    %0 = stablehlo.custom_call @tpu_custom_call(%arg0, %arg1) {backend_config = "{\22custom_call_config\22: {\22body\22: \22TUzvUgFNTElSMjQuMC4wZ2l0AAEjCQEDBQcBAwkDDwsNDxETFRcDuZURAY8TBwsPCw8PCwsXDw8LCw8TDw8LDxsLDzsLCwsLCwsLCw8LDwsPCwsPDw8PDw8XCw8LDw8LDw8PFw8LDw8LDw8LFyMPC1MLEwUFYU0HA1kBEQcjGw8HDxsLAhYFAwNNTx8FGR0REwUbHXl7HQ9RBR0FHxcJ5i4hHQ9VHQ9pBSEFIxEHAQMDXZMdZxMdJRMFJR1/gQMFKy0ZGwUnEQc9Aw0xMzU3Ox09HRkbP5EFKQEBBSsNDS8RBS0FLwUxHUMDBTMdRwMFNR1LAwU3BTkRAQEdBVMVBwcdBVcVB1kdEVsXCeYuOwU7HWFjBT0dBWUVISEFPx0FaxUHbR0RbxcJ5i5VHXN1BUEdBXcVIyMFQx0FfRUnJwVFFwnmLgUDByWFh4mLjREPAAVHIwsJIQEAAAABAAAAAgAAAAAAAAAFSSMLAQEjdHB1Lm1lbW9yeV9zcGFjZTx2bWVtPgAjdHB1LmNvcmVfdHlwZTx0Yz4AI2FyaXRoLmZhc3RtYXRoPG5vbmU+AAMXjwVBAgQJOScFQQIECQECBAcBAgIFBwMDAwEBCQQqAgUBEQMpBwMBBQcRAy8HAyNDBwNBA0UDSQMDDQEDAQMDDQEDAQUGDQMFBwEHCQMDFQEDAQMDFQEDAQUGFQMFBwMNDwkHXx8DBQULEQMDFwEDAQMDFwEDAQUGFwMFBwEVFwsHcR8DBQUTGQMDCwEDAQMDCwEDAQUGCwMFBwUdHw0FC4MJGwUdHw8AAwYDAQUBAHIGSxEpCw0LCQsTDQ0NDR0jIR0pLQkbEwkLLQMZIxcXFRkfDw0JHRFidWlsdGluAHN0YWJsZV9tb3NhaWMAdHB1AGFyaXRoAG1vZHVsZQBhcml0aC5jb25zdGFudAB2ZWN0b3IubG9hZABmdW5jLmZ1bmMAYXJpdGgubXVsZgBhcml0aC5hZGRmAHRwdS52ZWN0b3Jfc3RvcmUAZnVuYy5yZXR1cm4AADxqYXhwb3J0IHRwdSBrZXJuZWxzPgBnZXQ6AGdldABzeW1fbmFtZQBfYmYxNl9rZXJuZWwAYWRkAHN0YWJsZV9tb3NhaWMudmVyc2lvbgBkaW1lbnNpb25fc2VtYW50aWNzAGZ1bmN0aW9uX3R5cGUAc2NhbGFyX3ByZWZldGNoAHNjcmF0Y2hfb3BlcmFuZHMAdHB1LmNvcmVfdHlwZQB4X3JlZgB5X3JlZgBvX3JlZgB2YWx1ZQBmYXN0bWF0aABtdWw6AG11bABhZGQ6AHN3YXA6AHN3YXAAb3BlcmFuZFNlZ21lbnRTaXplcwBzdHJpZGVzAA==\22, \22serialization_format\22: 1, \22needs_layout_passes\22: true}}", kernel_name = "_bf16_kernel", mhlo.frontend_attributes = {kernel_metadata = "{}"}, operand_layouts = [dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>], result_layouts = [dense<[1, 0]> : tensor<2xindex>]} : (tensor<16x128xbf16>, tensor<16x128xbf16>) -> tensor<16x128xbf16> loc(#loc7)
    return %0 : tensor<16x128xbf16> loc(#loc6)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc3 = loc("<jaxport tpu kernels>":3101:9)
#loc4 = loc("<frozen runpy>":88:4)
#loc5 = loc("jit(_pallas_fma_bf16)"(#loc3))
#loc6 = loc("jit(_pallas_fma_bf16)"(#loc4))
#loc7 = loc("pallas_call"(#loc5))
