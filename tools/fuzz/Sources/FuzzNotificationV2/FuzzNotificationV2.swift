import FuzzSupport
import LedgerAppStore

/// libFuzzer entry: V2 server notifications, signed `{"signedPayload"}` and decoded JSON.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    Fuzz.decode(Array(UnsafeBufferPointer(start: data, count: size)), as: .notification)
    return 0
}
