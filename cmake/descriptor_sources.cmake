# The descriptor layer: building, naming, validating and laying out an
# OpDescriptor.  It depends on nothing else in convjit, so the fuzz targets
# (fuzz/) build it on its own with clang; the library builds it with the rest.
set(CONVJIT_DESCRIPTOR_SOURCES
  dispatcher/descriptor/batchnorm_name.cpp
  dispatcher/descriptor/batchnorm_validation.cpp
  dispatcher/descriptor/canonical_layout.cpp
  dispatcher/descriptor/descriptor_builder.cpp
  dispatcher/descriptor/descriptor_flags.cpp
  dispatcher/descriptor/descriptor_name.cpp
  dispatcher/descriptor/descriptor_validation.cpp
  dispatcher/descriptor/dtype.cpp
  dispatcher/descriptor/name_tokens.cpp
  dispatcher/descriptor/op_descriptor.cpp
  dispatcher/descriptor/operand_layout.cpp
  dispatcher/descriptor/output_shape.cpp
  dispatcher/descriptor/resize_name.cpp
  dispatcher/descriptor/resize_validation.cpp
  dispatcher/descriptor/tolerance.cpp
  dispatcher/descriptor/validation_checks.cpp
  dispatcher/descriptor/window_reach.cpp
)
