import FuzzSupport
import LedgerAppStore

/// libFuzzer entry: V1 server notifications (`POST /v1/apple/notifications`; also reaches V2 bodies).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    Fuzz.decode(Array(UnsafeBufferPointer(start: data, count: size)), as: .notification)
    return 0
}
