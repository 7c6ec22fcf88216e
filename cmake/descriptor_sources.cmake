# The descriptor layer: building, naming, validating and laying out an
# OpDescriptor.  It depends on nothing else in convjit, so the fuzz targets
# (fuzz/) build it on its own with clang; the library builds it with the rest.
set(CONVJIT_DESCRIPTOR_SOURCES
  dispatcher/canonical_layout.cpp
  dispatcher/descriptor_builder.cpp
  dispatcher/descriptor_flags.cpp
  dispatcher/descriptor_name.cpp
  dispatcher/descriptor_validation.cpp
  dispatcher/dtype.cpp
  dispatcher/op_descriptor.cpp
  dispatcher/operand_layout.cpp
  dispatcher/output_shape.cpp
)
