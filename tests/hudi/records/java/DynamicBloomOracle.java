// Reference for tms.hudi.records.bloom: Hadoop's DynamicBloomFilter (Hudi's InternalDynamicBloomFilter is a copy of it,
// bounded to a maximum number of entries; same serialization) over the keys given on stdin as hex of their
// UTF-8 bytes, one a line; prints the filter serialized and base64 encoded as Hudi writes it into footers.
// Usage: java -cp hadoop-client-api.jar DynamicBloomOracle.java VECTOR_SIZE NB_HASH NUM_ENTRIES < keys
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.InputStreamReader;
import java.util.Base64;
import java.util.HexFormat;

import org.apache.hadoop.util.bloom.DynamicBloomFilter;
import org.apache.hadoop.util.bloom.Key;
import org.apache.hadoop.util.hash.Hash;

public class DynamicBloomOracle {
  public static void main(String[] args) throws Exception {
    DynamicBloomFilter filter = new DynamicBloomFilter(
        Integer.parseInt(args[0]), Integer.parseInt(args[1]), Hash.MURMUR_HASH, Integer.parseInt(args[2]));
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      filter.add(new Key(HexFormat.of().parseHex(line)));
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    filter.write(new DataOutputStream(bytes));
    System.out.print(Base64.getEncoder().encodeToString(bytes.toByteArray()));
  }
}
