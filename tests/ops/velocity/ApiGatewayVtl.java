// API Gateway's mapping-template variables ($input, $util, $context) on Apache Velocity 1.7, the
// engine API Gateway documents for mapping templates. Compiled at test time (tests/ops/velocity_engine.py).
//
// Hand-written because no library offers them: they are API Gateway's, implemented here from the
// mapping template reference
// (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-mapping-template-reference.html).
// $util.escapeJavaScript is commons-lang's StringEscapeUtils.escapeJavaScript (the reference's note
// that it turns ' into \' is that function's behaviour); $util.urlEncode is java.net.URLEncoder
// ("application/x-www-form-urlencoded"); JSON is Jackson. A null reference renders as "" (the
// reference: "if a parameter is not found, an empty string"), through a reference-insertion handler.
//
// Reads a JSON array of cases on stdin ({template, body, params, context}) and writes a JSON array
// of {output, context} (the context after rendering: the template's overrides) or {error}.
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.StringWriter;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.commons.lang.StringEscapeUtils;
import org.apache.velocity.VelocityContext;
import org.apache.velocity.app.Velocity;
import org.apache.velocity.app.event.EventCartridge;
import org.apache.velocity.app.event.ReferenceInsertionEventHandler;

public class ApiGatewayVtl {
    static final ObjectMapper JSON = new ObjectMapper();

    public static class Input {
        private final String body;
        private final Map<String, Map<String, String>> params;

        Input(String body, Map<String, Map<String, String>> params) {
            this.body = body;
            this.params = params;
        }

        public String getBody() { return body; }

        private Object parsed() {
            try {
                return body == null || body.isEmpty() ? new LinkedHashMap<String, Object>() : JSON.readValue(body, Object.class);
            } catch (Exception e) {
                return null;
            }
        }

        /** Dotted JSONPath only ($, $.a.b): the only form the order API's templates use. */
        public Object path(String path) {
            Object node = parsed();
            if (path.equals("$")) return node;
            if (!path.startsWith("$.") || path.contains("[") || path.contains("*")) {
                throw new IllegalArgumentException("JSONPath not supported by this harness: " + path);
            }
            for (String part : path.substring(2).split("\\.")) {
                if (!(node instanceof Map)) return null;
                node = ((Map<?, ?>) node).get(part);
            }
            return node;
        }

        public String json(String path) throws Exception { return JSON.writeValueAsString(path(path)); }

        public Map<String, Map<String, String>> params() { return params; }

        /** Path, then query string, then header (the reference's order). */
        public String params(String name) {
            for (String kind : new String[] {"path", "querystring"}) {
                Map<String, String> values = params.get(kind);
                if (values != null && values.containsKey(name)) return values.get(name);
            }
            Map<String, String> headers = params.get("header");
            if (headers != null) {
                for (Map.Entry<String, String> h : headers.entrySet()) {
                    if (h.getKey().equalsIgnoreCase(name)) return h.getValue();
                }
            }
            return "";
        }
    }

    public static class Util {
        public String escapeJavaScript(String s) { return StringEscapeUtils.escapeJavaScript(s); }
        public String urlEncode(String s) throws Exception { return URLEncoder.encode(s, "UTF-8"); }
        public String urlDecode(String s) throws Exception { return URLDecoder.decode(s, "UTF-8"); }
        public String base64Encode(String s) { return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8)); }
        public String base64Decode(String s) { return new String(Base64.getDecoder().decode(s), StandardCharsets.UTF_8); }
        public Object parseJson(String s) throws Exception { return JSON.readValue(s, Object.class); }
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        Velocity.setProperty("runtime.log.logsystem.class", "org.apache.velocity.runtime.log.NullLogChute");
        Velocity.init();
        List<Map<String, Object>> cases = JSON.readValue(System.in, List.class);
        List<Map<String, Object>> results = new ArrayList<>();
        for (Map<String, Object> c : cases) {
            Map<String, Object> result = new LinkedHashMap<>();
            Map<String, Object> context = (Map<String, Object>) c.get("context");
            VelocityContext vc = new VelocityContext();
            vc.put("input", new Input((String) c.get("body"), (Map<String, Map<String, String>>) c.get("params")));
            vc.put("util", new Util());
            vc.put("context", context);
            vc.put("stageVariables", new LinkedHashMap<String, String>());
            EventCartridge events = new EventCartridge();
            events.addEventHandler((ReferenceInsertionEventHandler) (reference, value) -> value == null ? "" : value);
            events.attachToContext(vc);
            StringWriter out = new StringWriter();
            try {
                Velocity.evaluate(vc, out, "template", (String) c.get("template"));
                result.put("output", out.toString());
                result.put("context", context);
            } catch (Exception e) {
                result.put("error", e.toString());
            }
            results.add(result);
        }
        JSON.writeValue(System.out, results);
    }
}
