//! `#[derive(Row)]` for minnow: implements `minnow::ToRow` and `minnow::FromRow` for a struct
//! with named fields, each field mapped to the column of its name (or of
//! `#[minnow(rename = "column")]`). Use it through the `minnow` crate (`minnow::Row`,
//! feature `derive`, on by default); the `minnow::row` module docs explain the mapping.
//!
//! What it writes for `struct Book { isbn: String, #[minnow(rename = "qty")] stock: u32 }`:
//!
//! ```text
//! impl minnow::ToRow for Book {
//!     const COLUMNS: Option<&'static [&'static str]> = Some(&["isbn", "qty"]);
//!     const FIELDS: &'static [&'static str] = &["isbn", "stock"];
//!     fn to_values(&self) -> Vec<Value> { vec![self.isbn.to_value(), self.stock.to_value()] }
//! }
//! impl minnow::FromRow for Book {
//!     // COLUMNS and FIELDS as above
//!     fn from_row(values: Vec<Value>) -> Result<Book, RowError> {
//!         let [v0, v1] = minnow::row::values(values)?;
//!         Ok(Book { isbn: minnow::row::field(v0, 0)?, stock: minnow::row::field(v1, 1)? })
//!     }
//! }
//! ```
//!
//! Tuple structs, unit structs, enums, unions and generic structs are refused with a
//! compile error that says so, as are two fields for one column and unknown attributes.
//! The generated code names the crate `::minnow`, so the application depends on `minnow`
//! under that name.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::{Data, DeriveInput, Fields, LitStr, parse_macro_input};

/// Implements `minnow::ToRow` and `minnow::FromRow` for a struct with named fields: each
/// field is the column of its name, or of `#[minnow(rename = "column")]`. Field types are
/// `minnow::ToValue` (to write) and `minnow::FromValue` (to read).
#[proc_macro_derive(Row, attributes(minnow))]
pub fn derive_row(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// One field: its identifier, type span (where a missing conversion is reported) and the
/// column it maps to.
struct Field {
    ident: syn::Ident,
    column: String,
    span: Span,
    ty: Span,
}

fn expand(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "#[derive(Row)] does not support generic structs: write the ToRow and FromRow \
             impls by hand (see minnow::row)",
        ));
    }
    let fields = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(named) => &named.named,
            Fields::Unnamed(_) => {
                return Err(syn::Error::new_spanned(
                    name,
                    "#[derive(Row)] needs named fields (they name the columns); a tuple \
                     struct cannot say which column each field is: use a tuple, which maps \
                     by position, or name the fields",
                ));
            }
            Fields::Unit => {
                return Err(syn::Error::new_spanned(
                    name,
                    "#[derive(Row)] needs a struct with named fields, one per column",
                ));
            }
        },
        Data::Enum(_) => {
            return Err(syn::Error::new_spanned(
                name,
                "#[derive(Row)] supports structs with named fields, not enums",
            ));
        }
        Data::Union(_) => {
            return Err(syn::Error::new_spanned(
                name,
                "#[derive(Row)] supports structs with named fields, not unions",
            ));
        }
    };
    let mut mapped: Vec<Field> = Vec::with_capacity(fields.len());
    for f in fields {
        let Some(ident) = f.ident.clone() else {
            return Err(syn::Error::new_spanned(f, "a field without a name"));
        };
        let column = column_of(f)?.unwrap_or_else(|| unraw(&ident));
        if let Some(first) = mapped.iter().find(|m| m.column == column) {
            let mut e =
                syn::Error::new_spanned(&ident, format!("a second field for column `{column}`"));
            e.combine(syn::Error::new(first.span, "the first one"));
            return Err(e);
        }
        mapped.push(Field {
            span: ident.span(),
            ty: syn::spanned::Spanned::span(&f.ty),
            ident,
            column,
        });
    }
    if mapped.is_empty() {
        return Err(syn::Error::new_spanned(
            name,
            "#[derive(Row)] needs at least one field",
        ));
    }
    let columns: Vec<&str> = mapped.iter().map(|f| f.column.as_str()).collect();
    let field_names: Vec<String> = mapped.iter().map(|f| unraw(&f.ident)).collect();
    let vars: Vec<syn::Ident> = (0..mapped.len()).map(|i| format_ident!("v{i}")).collect();
    // Each conversion spanned at its field's type, so a type without one is reported there.
    let to_values = mapped.iter().map(|f| {
        let ident = &f.ident;
        quote_spanned!(f.ty=> ::minnow::ToValue::to_value(&self.#ident))
    });
    let from_values = mapped.iter().zip(&vars).enumerate().map(|(i, (f, v))| {
        let ident = &f.ident;
        quote_spanned!(f.ty=> #ident: ::minnow::row::field(#v, #i)?)
    });
    let n = mapped.len();
    Ok(quote! {
        impl ::minnow::ToRow for #name {
            const COLUMNS: ::core::option::Option<&'static [&'static str]> =
                ::core::option::Option::Some(&[#(#columns),*]);
            const FIELDS: &'static [&'static str] = &[#(#field_names),*];
            fn to_values(&self) -> ::std::vec::Vec<::minnow::Value> {
                ::std::vec![#(#to_values),*]
            }
        }

        impl ::minnow::FromRow for #name {
            const COLUMNS: ::core::option::Option<&'static [&'static str]> =
                ::core::option::Option::Some(&[#(#columns),*]);
            const FIELDS: &'static [&'static str] = &[#(#field_names),*];
            fn from_row(
                values: ::std::vec::Vec<::minnow::Value>,
            ) -> ::core::result::Result<Self, ::minnow::row::RowError> {
                let [#(#vars),*] = ::minnow::row::values::<#n>(values)?;
                ::core::result::Result::Ok(#name {
                    #(#from_values),*
                })
            }
        }
    })
}

/// The column of `#[minnow(rename = "...")]` on field `f`, if it has one.
fn column_of(f: &syn::Field) -> syn::Result<Option<String>> {
    let mut column = None;
    for attr in f.attrs.iter().filter(|a| a.path().is_ident("minnow")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                let lit: LitStr = meta.value()?.parse()?;
                if lit.value().is_empty() {
                    return Err(meta.error("a column name cannot be empty"));
                }
                column = Some(lit.value());
                Ok(())
            } else {
                Err(meta.error("unknown minnow attribute: the only one is `rename = \"column\"`"))
            }
        })?;
    }
    Ok(column)
}

/// A field's name as written, without `r#`.
fn unraw(ident: &syn::Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}
