import FuzzSupport
import LedgerAppStore

/// libFuzzer entry: API.md envelopes and bare documents, type detected (`POST /v1/events`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    Fuzz.decode(Array(UnsafeBufferPointer(start: data, count: size)), as: nil)
    return 0
}
