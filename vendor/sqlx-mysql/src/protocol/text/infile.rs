use crate::io::ProtocolEncode;
use crate::protocol::Capabilities;

// importgate: https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_query_response_local_infile_request.html
// The data of a `LOAD DATA LOCAL INFILE`, a packet of it; an empty one ends it.

#[derive(Debug)]
pub(crate) struct InfileData<'a>(pub(crate) &'a [u8]);

impl ProtocolEncode<'_, Capabilities> for InfileData<'_> {
    fn encode_with(&self, buf: &mut Vec<u8>, _: Capabilities) -> Result<(), crate::Error> {
        buf.extend_from_slice(self.0);
        Ok(())
    }
}
