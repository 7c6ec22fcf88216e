// A stand-in for libnvrtc that reports FAKE_NVRTC_MAJOR.FAKE_NVRTC_MINOR and
// exports nothing else: enough for the library search to read its version
// and, where that is accepted, to find it lacks the rest of NVRTC's API.
extern "C" int nvrtcVersion(int* major, int* minor) {
  *major = FAKE_NVRTC_MAJOR;
  *minor = FAKE_NVRTC_MINOR;
  return 0;
}
