#loc1 = loc("a")
#loc2 = loc("b")
module @jit__int8_dot attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<64x64xi8> loc("a"), %arg1: tensor<64x64xi8> loc("b")) -> (tensor<64x64xi32> {jax.result_info = "result"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<64x64xi8>, tensor<64x64xi8>) -> tensor<64x64xi32> loc(#loc7)
    return %0 : tensor<64x64xi32> loc(#loc6)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc3 = loc("_tpu.py":234:9)
#loc4 = loc("<frozen runpy>":88:4)
#loc5 = loc("jit(_int8_dot)"(#loc3))
#loc6 = loc("jit(_int8_dot)"(#loc4))
#loc7 = loc("dot_general"(#loc5))
