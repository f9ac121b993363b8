#loc1 = loc("a")
module @jit__lu attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32> loc("a")) -> (tensor<4x4xf32> {jax.result_info = "result[0]"}, tensor<4xi32> {jax.result_info = "result[1]"}, tensor<4xi32> {jax.result_info = "result[2]"}) {
    %0:3 = stablehlo.custom_call @LuDecomposition(%arg0) {api_version = 2 : i32} : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xi32>, tensor<4xi32>) loc(#loc6)
    return %0#0, %0#1, %0#2 : tensor<4x4xf32>, tensor<4xi32>, tensor<4xi32> loc(#loc5)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("_lapack.py":53:9)
#loc3 = loc("<frozen runpy>":88:4)
#loc4 = loc("jit(_lu)"(#loc2))
#loc5 = loc("jit(_lu)"(#loc3))
#loc6 = loc("lu"(#loc4))
