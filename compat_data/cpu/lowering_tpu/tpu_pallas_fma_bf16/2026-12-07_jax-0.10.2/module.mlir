#loc1 = loc("x")
#loc2 = loc("y")
module @jit__pallas_fma_bf16 attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16x128xbf16> loc("x"), %arg1: tensor<16x128xbf16> loc("y")) -> (tensor<16x128xbf16> {jax.result_info = "result"}) {
    %0 = stablehlo.custom_call @tpu_custom_call(%arg0, %arg1) {backend_config = "{\22custom_call_config\22: {\22body\22: \22TUzvUgFNTElSMjMuMC4wZ2l0AAEjCQEDBQcBAwkDDwsNDxETFRcDrYkRAYMTBwsPCw8PCwsXDw8PEw8PCw8TCw87CwsLC4ULCwsLCwsPDw8PDw8XCw8LDw8LDw8PFw8LDw8LDw8LFyMPC1MLEwUFYU0HA1kBEQcjGw8HDxsLAk4FAwNBQx8FGR0REwUbHW1vHQ9FBR0FHxcJ5i4hHQ9JHQ9dEQcBAwNRhx1bEx0hEwUhHXN1AwMnKQUjEQctAw0tLzEzNxk5GTs9P4UFJQEBBScNDWFmZmluZV9tYXA8KGQwLCBkMSkgLT4gKGQwLCBkMSk+AAUpBSsFLQUvBTEFMxEBAR0FRxUHBx0FSxUHTR0RTxcJ5i47BTUdVVcFNx0FWRUdHQU5HQVfFQdhHRFjFwnmLlUdZ2kFOx0FaxUfHwU9HQVxFSMjBT8XCeYuBQMHIXl7fX+BEQ8ABUEjCwkhAQAAAAEAAAACAAAAAAAAAAVDIwsBASN0cHUubWVtb3J5X3NwYWNlPHZtZW0+ACN0cHUuY29yZV90eXBlPHRjPgAjYXJpdGguZmFzdG1hdGg8bm9uZT4AAxeDBUECBAk1JwVBAgQJAQIEBwECAgUHAwMDAQEJBCoCBQERAyUHAwEFBxEDKwcDI0MHAwMDAwMDAwMNAQMBAwMNAQMBBQYNAwUHAQcJAwMVAQMBAwMVAQMBBQYVAwUHAw0PCQdTGwMFBQsRAwMXAQMBAwMXAQMBBQYXAwUHARUXCwdlGwMFBRMZAwMLAQMBAwMLAQMBBQYLAwUHBR0fDQULdwkbBR0fDwADBgMBBQEAHgZFESkLDQsJCxMNHRsTIyEdKS0JCQstAxkjFxcVGR8PDQkdEWJ1aWx0aW4Ac3RhYmxlX21vc2FpYwB0cHUAYXJpdGgAbW9kdWxlAGFyaXRoLmNvbnN0YW50AHZlY3Rvci5sb2FkAGZ1bmMuZnVuYwBhcml0aC5tdWxmAGFyaXRoLmFkZGYAdHB1LnZlY3Rvcl9zdG9yZQBmdW5jLnJldHVybgAAPGpheHBvcnQgdHB1IGtlcm5lbHM+AGdldDoAZ2V0AGFkZABzdGFibGVfbW9zYWljLnZlcnNpb24AZGltZW5zaW9uX3NlbWFudGljcwBmdW5jdGlvbl90eXBlAHNjYWxhcl9wcmVmZXRjaABzY3JhdGNoX29wZXJhbmRzAHN5bV9uYW1lAF9iZjE2X2tlcm5lbAB0cHUuY29yZV90eXBlAHZhbHVlAGZhc3RtYXRoAG11bDoAbXVsAGFkZDoAc3dhcDoAc3dhcABvcGVyYW5kU2VnbWVudFNpemVzAHN0cmlkZXMA\22, \22serialization_format\22: 1, \22needs_layout_passes\22: true}}", kernel_name = "_bf16_kernel", mhlo.frontend_attributes = {kernel_metadata = "{}"}, operand_layouts = [dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>], result_layouts = [dense<[1, 0]> : tensor<2xindex>]} : (tensor<16x128xbf16>, tensor<16x128xbf16>) -> tensor<16x128xbf16> loc(#loc7)
    return %0 : tensor<16x128xbf16> loc(#loc6)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc3 = loc("<jaxport tpu kernels>":3101:9)
#loc4 = loc("<frozen runpy>":88:4)
#loc5 = loc("jit(_pallas_fma_bf16)"(#loc3))
#loc6 = loc("jit(_pallas_fma_bf16)"(#loc4))
#loc7 = loc("pallas_call"(#loc5))
