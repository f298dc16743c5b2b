import FuzzSupport
import LedgerAppStore

/// libFuzzer entry: bare JWS, JWS strings and the Server API pair, type detected.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    Fuzz.decode(Array(UnsafeBufferPointer(start: data, count: size)), as: nil)
    return 0
}

/// The entry point SwiftPM links `main` to.
@_cdecl("FuzzJWS_main")
public func fuzzJWSMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv, fuzzOne)
}
