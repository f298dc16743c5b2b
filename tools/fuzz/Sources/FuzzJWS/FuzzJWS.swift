import FuzzSupport
import LedgerAppStore

/// libFuzzer entry: bare JWS, JWS strings and the Server API pair, type detected.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    Fuzz.decode(Array(UnsafeBufferPointer(start: data, count: size)), as: nil)
    return 0
}
