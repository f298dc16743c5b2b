import Foundation
import Hummingbird
import LedgerStore
import OpenAPIKit
import Testing
import Yams

@testable import LedgerServer

/// Sources/LedgerServer/openapi.yaml is a valid OpenAPI 3.1 document (parsed and validated by OpenAPIKit, a real
/// OpenAPI library) and describes exactly the routes the router serves.
@Suite("OpenAPI document")
struct OpenAPIDocumentTests {
    static let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/LedgerServer/openapi.yaml").path

    static func document(_ text: String? = nil) throws -> OpenAPI.Document {
        try YAMLDecoder().decode(OpenAPI.Document.self, from: text ?? String(contentsOfFile: path, encoding: .utf8))
    }

    // MARK: - Valid

    @Test func theDocumentParsesAndPassesOpenAPIKitsDefaultValidations() throws {
        let document = try Self.document()
        #expect(document.openAPIVersion == .v3_1_0)
        // Throws ValidationErrorCollection naming each failure; parse warnings count as failures (strict).
        try document.validate()
        // Every reference resolves (locallyDereferenced throws on a dangling $ref).
        _ = try document.locallyDereferenced()
    }

    @Test func everyPathTemplateVariableIsDeclaredAsAPathParameter() throws {
        let document = try Self.document().locallyDereferenced()
        for (path, item) in document.paths {
            let variables = path.components.filter { $0.hasPrefix("{") && $0.hasSuffix("}") }
                .map { String($0.dropFirst().dropLast()) }
            for endpoint in item.endpoints {
                let declared = (item.parameters + endpoint.operation.parameters).filter { $0.location == .path }
                    .map(\.name)
                #expect(
                    Set(declared) == Set(variables),
                    "\(endpoint.method.rawValue) \(path.rawValue): path parameters \(declared.sorted()), template \(variables.sorted())"
                )
            }
        }
    }

    /// What openapi-spec-validator reported for the document before its fix: a description with a comma in a YAML
    /// flow mapping, unquoted, is read as two keys. The parse must refuse such a document, or this suite could not
    /// catch the mistake coming back.
    @Test func anUnquotedCommaInAFlowMappingIsRefused() throws {
        let broken = """
            openapi: 3.1.0
            info: {title: t, version: '1'}
            paths:
              /v1/events:
                get:
                  parameters:
                    - {name: limit, in: query, description: at most this many (default 1000, max 10000), schema: {type: integer}}
                  responses:
                    '200': {description: ok}
            """
        #expect(throws: (any Error).self) {
            let document = try Self.document(broken)
            try document.validate()
        }
    }

    // MARK: - In step with the router

    @Test func everyServedRouteIsDocumentedAndEveryDocumentedOperationIsServed() throws {
        let (api, directory) = try RouterTests.makeAPI()
        defer {
            api.ledger.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        // Hummingbird's router lists its routes with their parameters as `{name}`, as OpenAPI writes them.
        let served = Set(api.makeRouter().routes.map { "\($0.method.rawValue) \($0.path.description)" })
        var documented = Set<String>()
        for (path, item) in try Self.document().paths {
            let pathItem = try #require(item.pathItemValue, "\(path.rawValue) is a reference; the document has none")
            for endpoint in pathItem.endpoints { documented.insert("\(endpoint.method.rawValue) \(path.rawValue)") }
        }
        #expect(served.count == 24, "\(served.sorted())")
        #expect(served == Set(Endpoint.allCases.map(\.route)), "the router serves the endpoint table, no more")
        #expect(
            served.subtracting(documented).isEmpty,
            "served but not documented: \(served.subtracting(documented).sorted())"
        )
        #expect(
            documented.subtracting(served).isEmpty,
            "documented but not served: \(documented.subtracting(served).sorted())"
        )
    }

    /// The query parameters each operation documents are the ones the server reads (`Endpoint.query`, by which
    /// `LedgerRoutes.checkQuery` refuses any other with 400 `invalid_query`), for every endpoint.
    @Test func everyOperationsQueryParametersAreTheOnesTheServerReads() throws {
        let document = try Self.document().locallyDereferenced()
        var documented: [String: Set<String>] = [:]
        for (path, item) in document.paths {
            for endpoint in item.endpoints {
                let names = (item.parameters + endpoint.operation.parameters).filter { $0.location == .query }
                    .map(\.name)
                documented["\(endpoint.method.rawValue) \(path.rawValue)"] = Set(names)
            }
        }
        let read = Dictionary(uniqueKeysWithValues: Endpoint.allCases.map { ($0.route, Set($0.query)) })
        #expect(read.count == 24)
        #expect(
            Set(read.keys) == Set(documented.keys),
            "routes: read \(read.keys.sorted()), documented \(documented.keys.sorted())")
        for (route, names) in read {
            #expect(
                documented[route] == names,
                "\(route): the server reads \(names.sorted()), the document lists \(documented[route]?.sorted() ?? [])")
        }
    }
}
