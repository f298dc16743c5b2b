import FuzzSupport
import LedgerAppStore

/// libFuzzer entry: V2 server notifications, signed `{"signedPayload"}` and decoded JSON.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    Fuzz.decode(Array(UnsafeBufferPointer(start: data, count: size)), as: .notification)
    return 0
}

/// The entry point SwiftPM links `main` to.
@_cdecl("FuzzNotificationV2_main")
public func fuzzNotificationV2Main(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv, fuzzOne)
}
